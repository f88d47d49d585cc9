// The critic and state-summary prompts.
#include <fmt/format.h>

#include "agents/critic_edits.hpp"
#include "agents/format.hpp"
#include "agents/template.hpp"
#include "mblast/agents.hpp"

namespace mblast {

namespace {

using agents::TemplateData;
using agents::TemplateList;

constexpr std::size_t kStepErrorChars = 300;
constexpr std::size_t kProblemMaxLines = 120;
constexpr std::size_t kProblemMaxChars = 6000;

std::string step_label(const TrajectoryStep& step, std::size_t index) {
  return step.step ? fmt::format("Step {}", *step.step) : fmt::format("Step {}", index + 1);
}

std::string deltas_text(const std::vector<MetricDelta>& deltas) {
  std::vector<std::string> parts;
  for (const auto& d : deltas) {
    parts.push_back(fmt::format("{} {} -> {}", d.metric, agents::format_number(d.before),
                                agents::format_number(d.after)));
  }
  return agents::join(parts, "; ");
}

TemplateData step_data(const TrajectoryStep& step, std::size_t index, bool current) {
  TemplateData item;
  item.set("label", step_label(step, index));
  item.set("is_current", current);
  item.set("state_id", step.state_id.empty() ? std::string("none") : step.state_id);
  item.set("technique_id", step.technique_id.empty() ? std::string("none") : step.technique_id);
  item.set("outcome", std::string(to_string(step.outcome)));
  item.set("time_before", agents::format_optional_ms(step.time_before_ms));
  item.set("time_after", agents::format_optional_ms(step.time_after_ms));
  const auto gain = step.speedup_before ? step_gain(step) : std::nullopt;
  const bool has_ratio = step.outcome == Outcome::correct && gain.has_value();
  item.set("has_step_ratio", has_ratio);
  item.set("step_ratio", has_ratio ? agents::format_speedup(*gain) : "");
  item.set("has_speedup", step.outcome == Outcome::correct && step.speedup.has_value());
  item.set("speedup", step.speedup ? agents::format_speedup(*step.speedup) : "");
  item.set("has_deltas", !step.profile_deltas.empty());
  item.set("deltas", deltas_text(step.profile_deltas));
  std::string error = agents::first_line(trim_error(step.error, 1000), kStepErrorChars);
  item.set("has_error", !error.empty());
  item.set("error", error);
  return item;
}

std::string claim_scope(const ClaimRow& claim) {
  std::vector<std::string> parts;
  if (claim.state_id) parts.push_back("state " + *claim.state_id);
  if (claim.technique_id) parts.push_back("technique " + *claim.technique_id);
  if (claim.backend) parts.push_back("backend " + *claim.backend);
  return parts.empty() ? std::string("general") : agents::join(parts, ", ");
}

template <class Row>
TemplateList id_name_description(const std::vector<Row>& rows) {
  TemplateList items;
  for (const auto& row : rows) {
    TemplateData item;
    item.set("id", row.id);
    item.set("name", row.name);
    item.set("description", row.description);
    items.push_back(item);
  }
  return items;
}

std::string conditions_text(const nlohmann::json& conditions) {
  std::vector<std::string> parts;
  for (const auto& c : conditions) {
    if (!c.is_object() || !c.contains("metric") || !c.contains("op") || !c.contains("value")) {
      parts.push_back(c.dump());
      continue;
    }
    std::string value = c["value"].is_number() ? agents::format_number(c["value"].get<double>())
                                               : c["value"].dump();
    parts.push_back(
        fmt::format("{} {} {}", c["metric"].get<std::string>(), c["op"].get<std::string>(), value));
  }
  return agents::join(parts, ", ");
}

}  // namespace

std::vector<LlmMessage> render_critic(const CriticContext& c) {
  TemplateData data;
  data.set("task", c.task);
  data.set("backend", c.backend);
  data.set("hardware", c.hardware.empty() ? std::string("unknown") : c.hardware);
  TemplateList steps;
  for (std::size_t i = 0; i < c.trajectory.size(); ++i) {
    steps.push_back(step_data(c.trajectory[i], i, i + 1 == c.trajectory.size()));
  }
  data.set("steps", steps);
  data.set("states", id_name_description(c.states));
  data.set("techniques", id_name_description(c.techniques));
  TemplateList claims;
  for (const auto& claim : c.claims) {
    TemplateData item;
    item.set("id", agents::short_id(claim.id));
    item.set("support", std::to_string(claim.support));
    item.set("refute", std::to_string(claim.refute));
    item.set("scope", claim_scope(claim));
    item.set("text", claim.text);
    claims.push_back(item);
  }
  data.set("claims", claims);
  data.set("max_edits", std::to_string(agents::kMaxEdits));
  data.set("max_text_chars", std::to_string(agents::kMaxClaimChars));
  data.set("max_note_chars", std::to_string(agents::kMaxNoteChars));
  return agents::with_system(agents::render_prompt("critic", data));
}

std::vector<LlmMessage> render_state_summary(const StateSummaryContext& c) {
  TemplateData data;
  data.set("task", c.task);
  data.set("backend", c.backend);
  data.set("hardware", c.hardware.empty() ? std::string("unknown") : c.hardware);
  data.set("classifier_state_id",
           c.classifier_state_id.empty() ? std::string("unclassified") : c.classifier_state_id);
  std::vector<std::string> evidence;
  for (const auto& e : c.classifier_evidence) {
    evidence.push_back(fmt::format("{} = {} ({} {})", e.metric, agents::format_number(e.value),
                                   e.op, agents::format_number(e.threshold)));
  }
  data.set("has_classifier_evidence", !evidence.empty());
  data.set("classifier_evidence", agents::join(evidence, ", "));
  TemplateList signature;
  if (c.signature.is_object()) {
    for (const auto& [name, value] : c.signature.items()) {
      TemplateData item;
      item.set("name", name);
      item.set("value",
               value.is_number() ? agents::format_number(value.get<double>()) : value.dump());
      signature.push_back(item);
    }
  }
  data.set("signature", signature);
  data.set("problem_source", agents::block_text(agents::excerpt(c.problem_source, kProblemMaxLines,
                                                                kProblemMaxChars)));
  TemplateList states;
  for (const auto& state : c.states) {
    TemplateData item;
    item.set("id", state.id);
    item.set("name", state.name);
    item.set("description", state.description);
    std::string conditions = conditions_text(state.conditions);
    item.set("has_conditions", !conditions.empty());
    item.set("conditions", conditions);
    states.push_back(item);
  }
  data.set("states", states);
  return agents::with_system(agents::render_prompt("state_summary", data));
}

}  // namespace mblast
