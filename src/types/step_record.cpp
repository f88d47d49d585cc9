#include "mblast/step_record.hpp"

#include <type_traits>
#include <utility>

#include "mblast/json_fields.hpp"

namespace mblast {
namespace {

using nlohmann::json;

// Lenient readers, since steps.jsonl may come from an older mblast: true when `key` held a value
// of T's kind, which is then in `out`.
template <typename T>
bool read(const json& line, const char* key, T& out) {
  const auto it = line.find(key);
  if (it == line.end()) return false;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return false;
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (!it->is_number()) return false;
  } else {
    if (!it->is_string()) return false;
  }
  out = it->get<T>();
  return true;
}

template <typename T>
void read(const json& line, const char* key, std::optional<T>& out) {
  T value{};
  if (read(line, key, value)) out = std::move(value);
}

Outcome outcome_or_skipped(const json& line, const char* key) {
  std::string name;
  read(line, key, name);
  return outcome_from(name).value_or(Outcome::skipped);
}

}  // namespace

json StepRecord::step_start_json() const {
  return {{"iteration", iteration},           {"step", step},
          {"global_step", global_step},       {"slot", slot},
          {"slot_share", slot_share},         {"state", state},
          {"state_evidence", state_evidence}, {"technique", technique},
          {"implementer", implementer}};
}

json StepRecord::to_json() const {
  json line = step_start_json();
  line["base"] = base;
  line["base_depth"] = optional_json(base_depth);
  line["candidate"] = candidate;
  line["candidates"] = json::array();
  for (const auto& c : candidates)
    line["candidates"].push_back({{"file", c.file}, {"outcome", to_string(c.outcome)}});
  line["fixes"] = fixes;
  line["outcome"] = to_string(outcome);
  line["error"] = optional_json(error);
  line["speedup"] = optional_json(speedup);
  line["reward"] = reward;
  line["improved"] = improved;
  line["new_best_candidate"] = new_best_candidate;
  line["best_speedup"] = optional_json(best_speedup);
  line["attempt_id"] = attempt_id;
  line["claims"] = claims;
  line["critic"] = critic;
  line["tokens_total"] = tokens_total;
  line["cost_total_usd"] = optional_json(cost_total_usd);
  line["evaluations_total"] = evaluations_total;
  line["seconds"] = seconds;
  line["run_seconds"] = run_seconds;
  return line;
}

StepRecord StepRecord::from_json(const json& line) {
  StepRecord r;
  if (!line.is_object()) return r;
  read(line, "iteration", r.iteration);
  read(line, "step", r.step);
  read(line, "global_step", r.global_step);
  read(line, "slot", r.slot);
  read(line, "slot_share", r.slot_share);
  read(line, "state", r.state);
  read(line, "state_evidence", r.state_evidence);
  read(line, "technique", r.technique);
  read(line, "implementer", r.implementer);
  read(line, "base", r.base);
  read(line, "base_depth", r.base_depth);
  read(line, "candidate", r.candidate);
  if (const auto it = line.find("candidates"); it != line.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (!c.is_object()) continue;
      StepCandidate candidate;
      read(c, "file", candidate.file);
      candidate.outcome = outcome_or_skipped(c, "outcome");
      r.candidates.push_back(std::move(candidate));
    }
  }
  read(line, "fixes", r.fixes);
  r.outcome = outcome_or_skipped(line, "outcome");
  read(line, "error", r.error);
  read(line, "speedup", r.speedup);
  read(line, "reward", r.reward);
  read(line, "improved", r.improved);
  read(line, "new_best_candidate", r.new_best_candidate);
  read(line, "best_speedup", r.best_speedup);
  read(line, "attempt_id", r.attempt_id);
  read(line, "claims", r.claims);
  read(line, "critic", r.critic);
  read(line, "tokens_total", r.tokens_total);
  read(line, "cost_total_usd", r.cost_total_usd);
  read(line, "evaluations_total", r.evaluations_total);
  read(line, "seconds", r.seconds);
  read(line, "run_seconds", r.run_seconds);
  return r;
}

}  // namespace mblast
