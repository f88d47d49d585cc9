#pragma once
// One finished step of `mblast optimize`: what the loop decided (slot, state, technique, base),
// what the judge said (outcome, speedup) and what it cost. The loop fills it, steps.jsonl stores
// it (one line per step, the resume log), resume, the progress lines and `mblast report` read it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/outcome.hpp"

namespace mblast {

struct StepCandidate {
  std::string file;  // a file name under candidates/
  Outcome outcome = Outcome::skipped;
};

// What the technique selector saw of the arm it chose: the attempts behind its score.
struct ArmEvidence {
  std::string statistics;  // "model" (reward_stats) or a region signature (region_stats)
  double n_local = 0;      // attempts on this hardware
  double n_prior = 0;      // discounted attempts from other hardware plus the seed prior
  double mean = 0, bonus = 0;
};

struct StepRecord {
  // Where in the run, and what the loop chose.
  int iteration = 0;
  int step = 0;  // within the iteration
  int global_step = 0;
  std::string slot;
  double slot_share = 1.0;
  std::string state, state_evidence;
  // With --profile ncu: the state Nsight Compute's counters imply (policy ncu_implied_state) and
  // the numbers behind it; where ncu gave none, no state and why in ncu_evidence.
  std::optional<std::string> ncu_state;
  std::string ncu_evidence;
  std::string technique, implementer;
  // Why this technique: "ucb" (with the chosen arm's evidence), "graph-first round" or "region
  // reuse" (reused_attempt below); and the ids of the KB claims the actor was shown.
  std::string decided_by;
  std::optional<ArmEvidence> arm;
  std::vector<std::string> claims_shown;
  // The implementation the technique was applied to, a file name under candidates/, and how many
  // lineage entries it keeps; absent in runs recorded before bases were.
  std::string base;
  std::optional<std::size_t> base_depth;
  // For a "first" built-in (sibling merge, batch-norm folding) stacked under the lineage: the
  // built-ins applied again over it, in order. Empty otherwise.
  std::vector<std::string> base_then;
  // Inside a legal graph-first round: the candidate without the round's CUDA graph, which later
  // steps build on (for the round's own step, the implementation it wrapped). Empty otherwise.
  std::string inner;

  // What came of it: the final candidate (after fixes; inside a legal graph round the faster of the
  // candidate as it is and inside the graph) and every candidate judged, the final one last.
  std::string candidate;
  std::vector<StepCandidate> candidates;
  int fixes = 0;
  Outcome outcome = Outcome::skipped;
  std::optional<std::string> error;  // its first line
  std::optional<double> speedup;
  // Eager's time in the final candidate's evaluation (the speedup is over it): host-bound models'
  // eager differs between processes, so it is kept per step (RunSummary::eager_range).
  std::optional<double> eager_ms;
  double reward = 0;
  // A region step: the region's own reward (policy region_reward), which the KB keeps per region
  // signature; where it retried what sped up the same computation before, that attempt's id and
  // whether it held here (correct, and the region faster).
  std::optional<double> region_reward;
  std::optional<std::string> reused_attempt;
  std::optional<bool> reuse_held;
  // "same": the reused attempt sped up this region's exact computation and shapes; "other": the
  // same computation at other shapes (its computation key).
  std::optional<std::string> reuse_shapes;
  bool improved = false;            // the current implementation moved to the candidate
  bool new_best_candidate = false;  // the run's best moved to it
  // Where its speedup and its own time disagreed on whether it beat the best: what decided (eager
  // varied over the run, so the times; core/selection.hpp).
  std::optional<std::string> selection_note;
  std::optional<double> best_speedup;
  std::string attempt_id;
  int claims = 0;      // critic claims accepted
  std::string critic;  // "llm" or "rule-based"

  // The run so far, after this step.
  std::int64_t tokens_total = 0;
  std::optional<double> cost_total_usd;
  int evaluations_total = 0;
  double seconds = 0;  // this step's wall
  double run_seconds = 0;

  // The steps.jsonl line. step_start_json: the fields known when the step starts (its progress
  // event).
  nlohmann::json to_json() const;
  nlohmann::json step_start_json() const;
  // Lenient: a field that is missing, null or of another type (older runs) keeps its default.
  static StepRecord from_json(const nlohmann::json& line);
};

}  // namespace mblast
