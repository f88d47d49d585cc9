#include "mblast/step_record.hpp"

#include "mblast/json_fields.hpp"

namespace mblast {
namespace {

using nlohmann::json;

Outcome outcome_or_skipped(const json& line, const char* key) {
  std::string name;
  read_lenient(line, key, name);
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
  if (ncu_state) line["ncu_state"] = *ncu_state;
  if (!ncu_evidence.empty()) line["ncu_evidence"] = ncu_evidence;
  if (!decided_by.empty()) {
    json decision = {{"by", decided_by}};
    if (arm) {
      decision["statistics"] = arm->statistics;
      decision["n_local"] = arm->n_local;
      decision["n_prior"] = arm->n_prior;
      decision["mean"] = arm->mean;
      decision["bonus"] = arm->bonus;
    }
    line["decision"] = decision;
  }
  if (!claims_shown.empty()) line["claims_shown"] = claims_shown;
  line["base"] = base;
  line["base_depth"] = optional_json(base_depth);
  if (!base_then.empty()) line["base_then"] = base_then;
  if (!inner.empty()) line["inner"] = inner;
  line["candidate"] = candidate;
  line["candidates"] = json::array();
  for (const auto& c : candidates)
    line["candidates"].push_back({{"file", c.file}, {"outcome", to_string(c.outcome)}});
  line["fixes"] = fixes;
  line["outcome"] = to_string(outcome);
  line["error"] = optional_json(error);
  line["speedup"] = optional_json(speedup);
  line["eager_ms"] = optional_json(eager_ms);
  line["reward"] = reward;
  if (region_reward) line["region_reward"] = *region_reward;
  if (reused_attempt) line["reused_attempt"] = *reused_attempt;
  if (reuse_held) line["reuse_held"] = *reuse_held;
  if (reuse_shapes) line["reuse_shapes"] = *reuse_shapes;
  line["improved"] = improved;
  line["new_best_candidate"] = new_best_candidate;
  if (selection_note) line["selection_note"] = *selection_note;
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
  read_lenient(line, "iteration", r.iteration);
  read_lenient(line, "step", r.step);
  read_lenient(line, "global_step", r.global_step);
  read_lenient(line, "slot", r.slot);
  read_lenient(line, "slot_share", r.slot_share);
  read_lenient(line, "state", r.state);
  read_lenient(line, "state_evidence", r.state_evidence);
  read_lenient(line, "ncu_evidence", r.ncu_evidence);
  if (const auto it = line.find("ncu_state"); it != line.end() && it->is_string()) {
    r.ncu_state = it->get<std::string>();
  }
  read_lenient(line, "technique", r.technique);
  read_lenient(line, "implementer", r.implementer);
  if (const auto it = line.find("decision"); it != line.end() && it->is_object()) {
    read_lenient(*it, "by", r.decided_by);
    if (it->contains("statistics")) {
      ArmEvidence arm;
      read_lenient(*it, "statistics", arm.statistics);
      read_lenient(*it, "n_local", arm.n_local);
      read_lenient(*it, "n_prior", arm.n_prior);
      read_lenient(*it, "mean", arm.mean);
      read_lenient(*it, "bonus", arm.bonus);
      r.arm = arm;
    }
  }
  r.claims_shown = read_lenient_strings(line, "claims_shown");
  read_lenient(line, "base", r.base);
  read_lenient(line, "base_depth", r.base_depth);
  r.base_then = read_lenient_strings(line, "base_then");
  read_lenient(line, "inner", r.inner);
  read_lenient(line, "candidate", r.candidate);
  if (const auto it = line.find("candidates"); it != line.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (!c.is_object()) continue;
      StepCandidate candidate;
      read_lenient(c, "file", candidate.file);
      candidate.outcome = outcome_or_skipped(c, "outcome");
      r.candidates.push_back(std::move(candidate));
    }
  }
  read_lenient(line, "fixes", r.fixes);
  r.outcome = outcome_or_skipped(line, "outcome");
  read_lenient(line, "error", r.error);
  read_lenient(line, "speedup", r.speedup);
  read_lenient(line, "eager_ms", r.eager_ms);
  read_lenient(line, "reward", r.reward);
  read_lenient(line, "region_reward", r.region_reward);
  read_lenient(line, "reused_attempt", r.reused_attempt);
  read_lenient(line, "reuse_held", r.reuse_held);
  read_lenient(line, "reuse_shapes", r.reuse_shapes);
  read_lenient(line, "improved", r.improved);
  read_lenient(line, "new_best_candidate", r.new_best_candidate);
  read_lenient(line, "selection_note", r.selection_note);
  read_lenient(line, "best_speedup", r.best_speedup);
  read_lenient(line, "attempt_id", r.attempt_id);
  read_lenient(line, "claims", r.claims);
  read_lenient(line, "critic", r.critic);
  read_lenient(line, "tokens_total", r.tokens_total);
  read_lenient(line, "cost_total_usd", r.cost_total_usd);
  read_lenient(line, "evaluations_total", r.evaluations_total);
  read_lenient(line, "seconds", r.seconds);
  read_lenient(line, "run_seconds", r.run_seconds);
  return r;
}

}  // namespace mblast
