#pragma once
// The MAIC-RL policy's numeric parts: which slot to work on, which state it is in, which technique
// to try. All deterministic for a given seed; the knowledge base supplies states and statistics.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/kb.hpp"
#include "mblast/profile_signature.hpp"

namespace mblast {

// ---- State classifier -------------------------------------------------------------------------

// A profile signature's numbers by metric name (see kb_schema/seed/states.json for the names).
using Signature = std::map<std::string, double>;

struct ConditionEvidence {
  std::string state_id;
  std::string metric;
  std::string op;
  double threshold = 0;
  std::optional<double> value;  // nullopt: the signature lacks the metric (condition false)
  bool holds = false;
};

struct Classification {
  std::string state_id;  // the deepest state under the chosen root whose conditions all hold
  int depth = 0;         // 0 for a root
  // The conditions of the chosen state and its ancestors, root first: which numbers crossed
  // which thresholds.
  std::vector<ConditionEvidence> evidence;
  std::string explain() const;  // "launch_overhead_fraction = 0.47 (>= 0.3), ..."
};

// Decides the root first: among the roots whose conditions hold, the one with more conditions
// (more specific evidence), then the earlier-defined one. Then the deepest state under that root
// whose conditions, and its ancestors', all hold; ties again to more evidence, then definition
// order. A state without conditions matches anything, so a KB with a condition-less root always
// classifies; throws mblast::Error when nothing matches.
Classification classify(const std::vector<StateRow>& states, const Signature& signature);

// The techniques to try first in a state: its own try_first list, then its ancestors', nearest
// first, each technique once. Unknown states have none.
std::vector<std::string> try_first_of(const std::vector<StateRow>& states,
                                      const std::string& state_id);

// The first of a built-in's avoid_when conditions that holds on `signature`, as "metric = value
// (op threshold)"; empty when none does (a metric the signature lacks holds nothing).
std::string avoided_because(const TechniqueRow& technique, const Signature& signature);

// ---- Technique selector (UCB) -----------------------------------------------------------------

struct SelectorConfig {
  // c in mean + c * sqrt(ln(N + 1) / n). Rewards are log speedups, mostly within +-1 (a failure
  // is -1), so c = 0.5 lets a 1.5x gap (0.4) win after a handful of tries.
  double exploration = 0.5;
  double other_hardware_weight = 0.5;  // discount of statistics from other hardware (transfer)
  double seed_prior_count = 0.5;    // pseudo-observations for techniques the KB lists for the state
  double seed_prior_reward = 0.05;  // their assumed mean reward
  double failure_reward = -1.0;     // the reward of a failed attempt
  int constraint_min_failures = 3;  // this many failures and no success remove an arm
  bool llm_available = true;        // false: built-in techniques only
  std::vector<std::string> allowed_requirements;  // e.g. "allow_tf32": built-ins needing them
  // The state's likely winners, best bet first (try_first_of): the first gets the seed prior
  // plus try_first_reward as its assumed mean, later ranks proportionally less. Like the seed
  // listing it orders the arms not yet tried and fades as attempts accumulate.
  std::vector<std::string> try_first;
  double try_first_reward = 0.3;
};

// Why a technique cannot be tried here at all, or empty: not for `backend`, deprecated, an LLM
// technique without an LLM, or a built-in whose requirements are not all allowed. select_technique
// removes such arms, and the loop's graph-first round offers none of them either.
std::string technique_unavailable(const TechniqueRow& technique, const std::string& backend,
                                  const SelectorConfig& config);

struct ArmScore {
  std::string technique_id;
  double n_local = 0;  // attempts on this hardware
  double n_prior = 0;  // discounted attempts from other hardware plus the seed prior
  double mean = 0;     // the effective mean reward
  double bonus = 0;    // exploration term, c * sqrt(ln(N + 1) / (n_local + n_prior))
  double score = 0;
  bool removed = false;  // filtered by a constraint
  std::string removed_reason;
};

struct Selection {
  std::string technique_id;    // empty when no arm is left
  std::vector<ArmScore> arms;  // every candidate arm, best first
};

// UCB over the arms for (state, backend, hardware). Statistics for the same (state, technique,
// backend) on other hardware enter with other_hardware_weight; every arm carries its prior
// (seed listing, try_first rank, or for an arm nothing is known of a neutral one: no gain, with
// the seed prior's weight), so no bonus is infinite: an arm that paid off in this state, in
// this task or an earlier one, can be taken before arms never tried; ties fall in a seeded
// random order; arms that failed constraint_min_failures times without a success on this
// hardware are removed, as are deprecated techniques, LLM techniques without an LLM and built-ins
// whose requirements are not allowed.
Selection select_technique(const std::vector<TechniqueRow>& techniques,
                           const std::vector<RewardStat>& stats, const std::string& state_id,
                           const std::string& backend, const std::string& hardware,
                           const SelectorConfig& config, std::uint64_t seed);

// ---- Operator selector ------------------------------------------------------------------------

struct Slot {
  std::string id;         // "model", an operator's name, or a region window's slot id
  double time_share = 0;  // of the whole forward, 0..1
  int steps_without_gain = 0;
  int visits = 0;
  std::vector<std::string> ops;       // a region window's torch.fx ops (empty for the others)
  std::vector<std::string> op_kinds;  // and their kinds ("conv2d"), for built-ins' needs_ops
  // A region window's signature, exact key, computation key and input shapes (RegionWindow);
  // empty otherwise.
  std::string region_signature, region_key, region_computation;
  std::vector<std::string> input_shapes;
  std::string region_code;  // the window as Python, for the agents
};

struct OperatorSelectorConfig {
  double stall_decay = 0.7;  // priority shrinks by this factor per step without improvement
  double exploration = 0.1;  // weight of sqrt(ln(total visits + 1) / (visits + 1))
};

// priority = time_share * stall_decay^steps_without_gain
//            + exploration * sqrt(ln(total_visits + 1) / (visits + 1))
double slot_priority(const Slot& slot, int total_visits, const OperatorSelectorConfig& config);

// The slot with the highest priority (ties: the first). Throws mblast::Error for no slots.
std::size_t select_slot(const std::vector<Slot>& slots, const OperatorSelectorConfig& config);
// Every slot's index, highest priority first (ties: in order): where a step goes when the first
// slot has nothing left to try.
std::vector<std::size_t> slots_by_priority(const std::vector<Slot>& slots,
                                           const OperatorSelectorConfig& config);

// Slots from a profile signature's top-level op time shares ("regions": [{"name", "share"}, ...],
// else "ops"):
//  - always "model", the whole forward, where whole-model techniques (built-ins, fusion) apply;
//  - with per_op_slots, one slot per op of at least min_share of the time (the largest
//    max_op_slots), when there are two or more; a single-op problem keeps "model" alone.
// "model" has time share 1 alone, else max(model_floor, 1 - the largest op's share), so the
// dominant op is worked on first and the whole model still gets its turns.
struct SlotConfig {
  double min_share = 0.05;
  std::size_t max_op_slots = 4;
  double model_floor = 0.2;
};
std::vector<Slot> slots_from_signature(const ProfileSignature& signature, bool per_op_slots,
                                       const SlotConfig& config = {});

// ---- Ground truth ------------------------------------------------------------------------------

// The state Nsight Compute's measurements imply, the ground truth the classifier is checked
// against (issue 27; the rule is docs/STATES.md's, fixed before any comparison and not tuned per
// problem): near-roofline where the counted work runs at 80 % of its speed of light or more;
// launch-bound where the profiled kernels (all of the forward's) were busy less than 70 % of the
// measured time; otherwise memory-bound where the busiest memory unit's throughput, as a fraction
// of its peak, is at least the SMs', else compute-bound; each with the child the counters name.
// Every weighted mean is by kernel duration.
struct ImpliedState {
  std::string state_id;
  std::string root;
  std::string because;  // the numbers that decided, in words
};
// nullopt where the signature has no Nsight Compute numbers (`--profile ncu` not asked, or failed).
std::optional<ImpliedState> ncu_implied_state(const ProfileSignature& signature);

// The root of a state (itself for a root); empty for a state the list does not have.
std::string root_of(const std::vector<StateRow>& states, const std::string& state_id);

// One signature's state from the cheap numbers (the PyTorch profiler's and the counted work's,
// Nsight Compute's left out) beside the state Nsight Compute implies.
struct StateCheck {
  Classification cheap;
  std::string cheap_root;
  std::optional<ImpliedState> implied;
  bool root_agrees() const { return implied && implied->root == cheap_root; }
  bool state_agrees() const { return implied && implied->state_id == cheap.state_id; }
};
StateCheck check_state(const std::vector<StateRow>& states, const ProfileSignature& signature);

// ---- Reward ------------------------------------------------------------------------------------

// Correctness-gated (docs/ARCHITECTURE.md §3): a correct candidate earns log(speedup /
// best_before), where both speedups are over the same eager baseline; anything else earns
// failure_reward.
double step_reward(bool correct, std::optional<double> speedup, double best_before,
                   double failure_reward = -1.0);

// A step on a region window, rewarded as the region's own speedup, so that regions of one
// signature compare across models whatever their share: the model went from the base's time to
// the candidate's, and all of the change is put on the region, which held `share` of the base's
// time. The implied speedup is kept within [1 / max_region_speedup, max_region_speedup] (timing
// noise on a small share); without a share, the step's own reward.
double region_reward(bool correct, std::optional<double> speedup, double base_speedup, double share,
                     double failure_reward = -1.0, double max_region_speedup = 16.0);

}  // namespace mblast
