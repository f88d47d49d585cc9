// The LLM critic and the state summary: JSON answers, validated, one repair request each.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <functional>

#include "agents/critic_edits.hpp"
#include "agents/format.hpp"
#include "agents/request.hpp"
#include "mblast/agents.hpp"

namespace mblast {

namespace {

using agents::request_for;

constexpr std::size_t kMaxReasonChars = 600;

std::string repair_message(const std::vector<std::string>& errors, const std::string& shape) {
  std::string text = "Your answer could not be used:\n";
  for (const auto& error : errors) text += "- " + error + "\n";
  return text + "\nAnswer again with the corrected JSON object only (" + shape +
         "), complete, with nothing before or after it.";
}

// Asks, validates, and on failure asks once more with the errors. `check` returns the errors of
// an answer (empty when it is usable). Returns the last answer's errors.
std::vector<std::string> ask_with_repair(
    LlmClient& client, LlmRequest request, const std::string& shape, int& calls,
    const std::function<std::vector<std::string>(const nlohmann::json&)>& check) {
  std::vector<std::string> errors;
  for (int round = 0; round < 2; ++round) {
    LlmResponse response = client.complete(request);
    ++calls;
    try {
      errors = check(extract_json_object(response));
    } catch (const ResponseError& error) {
      errors = {error.what()};
    }
    if (errors.empty() || round == 1) break;
    spdlog::info("{}: answer invalid ({} problem{}), asking once for a corrected one",
                 request.role_tag, errors.size(), errors.size() == 1 ? "" : "s");
    request.messages.push_back(LlmMessage{"assistant", response.text});
    request.messages.push_back(LlmMessage{"user", repair_message(errors, shape)});
  }
  return errors;
}

std::string step_note(const CriticContext& c, const TrajectoryStep& step, const std::string& what) {
  std::string note =
      fmt::format("{} {} in {} on {} (task {})", step.technique_id, what, step.state_id,
                  c.hardware.empty() ? std::string("unknown hardware") : c.hardware, c.task);
  return note.size() <= agents::kMaxNoteChars ? note : note.substr(0, agents::kMaxNoteChars);
}

}  // namespace

CriticVerdict ask_critic(LlmClient& client, const CriticContext& context, const KnowledgeBase& kb) {
  CriticVerdict verdict;
  agents::ValidatedEdits last;
  int validated_call = 0;
  auto errors =
      ask_with_repair(client, request_for("critic", render_critic(context), context.sampling),
                      "{\"edits\": [...]}", verdict.llm_calls, [&](const nlohmann::json& answer) {
                        last = agents::validate_edits(answer, kb);
                        validated_call = verdict.llm_calls;
                        return last.errors;
                      });
  // The valid edits of the final answer are applied even when others in it were rejected.
  if (validated_call != verdict.llm_calls || !last.document_ok) last.valid.clear();
  for (const auto& error : errors) {
    spdlog::warn("critic: rejected after {} answers: {}", verdict.llm_calls, error);
    verdict.rejected_reasons.push_back(error);
  }
  verdict.valid = std::move(last.valid);
  return verdict;
}

CriticOutcome apply_critic(const CriticVerdict& verdict, KnowledgeBase& kb,
                           const std::string& attempt_id, const std::string& backend) {
  CriticOutcome outcome;
  outcome.llm_calls = verdict.llm_calls;
  outcome.rejected_reasons = verdict.rejected_reasons;
  if (verdict.valid.empty()) return outcome;
  try {
    outcome.accepted = agents::apply_edits(verdict.valid, kb, attempt_id, backend);
  } catch (const std::exception& error) {
    spdlog::warn("critic: the KB did not take the edits: {}", error.what());
    outcome.rejected_reasons.push_back(std::string("applying the edits failed: ") + error.what());
  }
  return outcome;
}

CriticOutcome run_critic(LlmClient& client, const CriticContext& context, KnowledgeBase& kb,
                         const std::string& attempt_id) {
  return apply_critic(ask_critic(client, context, kb), kb, attempt_id, context.backend);
}

std::optional<double> step_gain(const TrajectoryStep& step) {
  if (!step.speedup) return std::nullopt;
  if (step.speedup_before && *step.speedup_before > 0) return *step.speedup / *step.speedup_before;
  return step.speedup;
}

// Support at a 2% gain, refute on a failure or a 2% loss: timing noise is about that size.
CriticOutcome rule_based_critic(const CriticContext& context, KnowledgeBase& kb,
                                const std::string& attempt_id) {
  constexpr double kGain = 1.02;
  constexpr double kLoss = 0.98;
  CriticOutcome outcome;
  if (context.trajectory.empty()) return outcome;
  const TrajectoryStep& step = context.trajectory.back();
  if (step.state_id.empty() || step.technique_id.empty() || step.outcome == Outcome::skipped) {
    return outcome;
  }
  std::string direction, note;
  if (step.outcome != Outcome::correct) {
    std::string error = agents::first_line(trim_error(step.error, 1000), 160);
    note = step_note(context, step, "failed (" + std::string(to_string(step.outcome)) + ")");
    if (!error.empty()) note += ": " + error;
    direction = "refute";
  } else {
    const std::optional<double> gain = step_gain(step);
    if (!gain || (*gain >= kLoss && *gain < kGain)) return outcome;
    direction = *gain >= kGain ? "support" : "refute";
    note = step_note(context, step, "gave " + agents::format_speedup(*gain));
  }
  if (note.size() > agents::kMaxNoteChars) note.resize(agents::kMaxNoteChars);
  nlohmann::json edit = {{"op", "add_claim"},
                         {"text", fmt::format("{} helps in {} on {}", step.technique_id,
                                              step.state_id, context.backend)},
                         {"state_id", step.state_id},
                         {"technique_id", step.technique_id},
                         {"backend", context.backend},
                         {"evidence", direction},
                         {"note", note}};
  auto checked = agents::validate_edits({{"edits", {edit}}}, kb);
  for (const auto& error : checked.errors) {
    spdlog::warn("rule-based critic: {}", error);
    outcome.rejected_reasons.push_back(error);
  }
  if (!checked.valid.empty()) {
    outcome.accepted = agents::apply_edits(checked.valid, kb, attempt_id, context.backend);
  }
  return outcome;
}

std::optional<StateSummary> run_state_summary(LlmClient& client,
                                              const StateSummaryContext& context) {
  StateSummary summary;
  int calls = 0;
  auto errors = ask_with_repair(
      client, request_for("state", render_state_summary(context), context.sampling),
      "{\"state_id\": ..., \"reason\": ...}", calls, [&](const nlohmann::json& answer) {
        std::vector<std::string> problems;
        for (const auto& [key, value] : answer.items()) {
          if (key != "state_id" && key != "reason") {
            problems.push_back("unknown field '" + key + "'");
          }
        }
        if (!answer.contains("state_id") || !answer["state_id"].is_string()) {
          problems.push_back("state_id must be a string");
        } else {
          summary.state_id = answer["state_id"].get<std::string>();
          bool known = false;
          for (const auto& state : context.states) known = known || state.id == summary.state_id;
          if (!known) problems.push_back("state_id '" + summary.state_id + "' is not in the list");
        }
        if (!answer.contains("reason") || !answer["reason"].is_string()) {
          problems.push_back("reason must be a string");
        } else {
          summary.reason = answer["reason"].get<std::string>();
          if (summary.reason.size() > kMaxReasonChars) {
            problems.push_back(fmt::format("reason is longer than {} characters", kMaxReasonChars));
          }
        }
        return problems;
      });
  if (errors.empty()) return summary;
  for (const auto& error : errors) spdlog::warn("state summary: rejected: {}", error);
  return std::nullopt;
}

}  // namespace mblast
