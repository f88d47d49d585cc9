#pragma once
// The pieces `optimize` is built from, kept out of the loop so that it reads top to bottom.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_dir.hpp"
#include "mblast/agents.hpp"
#include "mblast/eval_result.hpp"
#include "mblast/kb.hpp"
#include "mblast/llm.hpp"
#include "mblast/optimize.hpp"
#include "mblast/policy.hpp"
#include "mblast/program_regions.hpp"
#include "mblast/step_record.hpp"

namespace mblast::optimize_detail {

// The implementation the next step starts from.
struct Current {
  std::filesystem::path file;  // a candidate file; at first the reference as a candidate
  bool is_reference = true;
  double speedup = 1.0;  // over eager, as measured when it was judged
  std::optional<double> time_ms;
  ProfileSignature signature;        // its profile signature
  std::vector<std::string> lineage;  // the techniques applied to reach it, oldest first
  // ancestry[i]: the implementation lineage[i] was applied to (ancestry[0] the reference).
  std::vector<std::filesystem::path> ancestry;
};

// A built-in of the lineage applied again over a "first" built-in (see Base).
struct Reapplied {
  std::string technique_id;
  std::string transform;  // the backend's transform; empty in a base read back from a step record
};

// Where a step's technique is applied. A built-in sharing a group with one of the lineage (the
// max-autotune compile after the default one) is not stacked on it: it is tried in its place, on
// the implementation that one was applied to, keeping the `depth` lineage entries before it.
// A "first" built-in (one that traces the Model's own forward: sibling merge, batch-norm folding)
// applies to the reference, with the lineage's built-ins applied again over it (`then`): folded,
// then channels-last, then compiled, where the lineage was channels-last then compiled.
struct Base {
  std::filesystem::path file;
  std::size_t depth = 0;  // lineage entries kept; 0: the reference
  std::vector<Reapplied> then;
  bool is_reference() const { return depth == 0; }
};

// The current implementation itself as a base.
Base base_of(const Current& current);
// The reference as a base, where region built-ins apply (their candidate traces the problem's
// Model); none for a current implementation whose ancestry is unknown (runs recorded before it).
std::optional<Base> reference_base(const Current& current);

// What a technique applied in `slot` is called in a lineage and in the tried set: its id, with
// "@<slot>" for a region's (a region compile and the whole model's are other candidates).
std::string applied_name(const std::string& technique_id, const std::string& slot);
// The name under which a step is kept in the tried set: applied_name, with "+<id>" for each
// built-in re-applied over it (the same "first" built-in under another lineage is another
// candidate).
std::string tried_name(const std::string& technique_id, const std::string& slot, const Base& base);
// The technique id of an applied name.
std::string technique_of(const std::string& applied);

// The base a built-in would be applied to; none when it is in the lineage already, or conflicts
// with a lineage entry whose ancestor is unknown, or (a "first" built-in) when the lineage holds
// something it cannot re-apply over it (an LLM's candidate, a region's built-in).
std::optional<Base> builtin_base(const TechniqueRow& technique,
                                 const std::vector<TechniqueRow>& all, const Current& current);

// (implementation file, technique id) pairs already tried: a deterministic built-in applied to
// one implementation gives the same candidate again.
using Tried = std::set<std::pair<std::string, std::string>>;

// The best verified candidate of the run: at first the reference itself, the run's floor.
struct BestCandidate {
  std::filesystem::path file;
  double speedup = 0;
  std::optional<double> time_ms;
  std::optional<double> baseline_ms;
  std::string technique_id;
  int step = 0;                     // global step that found it
  std::optional<double> sol_score;  // from its evaluation (SOL-ExecBench's, eager as T_b)
};
// A number the judge added to a result beyond the typed fields ("sol_ms", "sol_score"), if any.
std::optional<double> extra_number(const EvalResult& result, const char* key);

struct Agents {
  std::shared_ptr<LlmLedger> ledger;
  std::unique_ptr<LlmClient> actor, fix, critic;
  std::string description;  // "openai:gpt-4o", "none (built-in techniques only)", ...
  bool replay = false;
  bool available() const { return actor != nullptr; }
};

// LLM clients for the roles from --llm, $MBLAST_LLM, the config file or the keys; none when the
// actor's spec is "none". Budgets go to the shared ledger.
Agents make_agents(const OptimizeOptions& options, std::int64_t tokens_before, double cost_before);

// "level2/19_ConvTranspose2d_GELU" from its path.
std::string task_name(const std::filesystem::path& problem);
// The built-in requirements this run allows ("gpu", "torch_compile", "allow_tf32", ...).
std::vector<std::string> allowed_requirements(const OptimizeOptions& options,
                                              const EvalResult& baseline);

// Techniques a step in `slot` may pick: those in `only` (when it is not empty); built-ins for the
// whole model, and in a region's slot those that take a region, applied to the reference; none
// already in the current implementation's lineage or tried on its base (builtin_base: one sharing a
// group such as "compile" with a built-in of the lineage replaces that one instead of compiling a
// compiled model again), none needing ops the problem lacks
// (`needs_ops`: substrings of the baseline profile's op names; unknown ops filter nothing), none
// before the built-ins it names in `after` have been judged in this run (an expensive variant such
// as max-autotune waits for the default compile, which shows in seconds whether the compiler helps
// at all), and (native backends, whose built-ins tune a kernel) only once there is a candidate to
// tune.
struct EligibleTechniques {
  std::vector<TechniqueRow> techniques;
  std::map<std::string, Base> builtin_bases;  // by technique id: where each built-in applies
  // The implementation a step with `technique` (one of `techniques`) starts from.
  Base base_for(const TechniqueRow& technique, const Current& current) const;
};
EligibleTechniques eligible_techniques(const std::vector<TechniqueRow>& all,
                                       const std::string& slot, const Current& current,
                                       const Tried& tried, const std::vector<std::string>& only,
                                       bool builtins_need_a_candidate,
                                       const std::vector<std::string>& problem_ops = {});

// The op names of a profile signature (its ops and regions).
std::vector<std::string> signature_op_names(const ProfileSignature& signature);

std::vector<StateEvidence> state_evidence(const Classification& classification);

// One evaluation within a step.
struct Evaluation {
  std::filesystem::path file;
  // Inside a legal graph-first round: the same candidate without the round's graph, which later
  // steps build on (the graph stays the outermost wrapper). Empty otherwise.
  std::filesystem::path inner;
  EvalResult result;
  Outcome outcome = Outcome::incorrect;
  std::int64_t tokens = 0;  // of the LLM call that wrote it
  bool fix = false;         // the fix agent's answer to a failed candidate of the step
};

std::string candidate_hash(const std::filesystem::path& file);

// The attempt row for an evaluation; reward only on the step's final evaluation.
AttemptRow attempt_row(const Evaluation& evaluation, const std::string& run_id,
                       const std::string& task, const std::string& slot,
                       const std::string& state_id, const std::string& technique_id,
                       const std::string& backend, const std::string& hardware, int iteration,
                       int step, std::optional<double> reward);

// The signature that classifies the first step: the judge's profile of eager (the reference
// side), with the Nsight Compute numbers of the reference judged as a candidate where `--profile
// ncu` measured them (ncu profiles the candidate side only); the candidate side's where the judge
// profiled no reference side.
ProfileSignature baseline_signature(const EvalResult& reference_judged);

// Metric changes between two signatures, for the critic.
std::vector<MetricDelta> profile_deltas(const ProfileSignature& before,
                                        const ProfileSignature& after);

// A step's record as far as the choice fills it (the rest comes as the step ends).
// The state Nsight Compute's counters imply for the signature that classified the step, and why
// (--profile ncu); where ncu gave no numbers, why not.
void add_ncu_state(StepRecord& record, const ProfileSignature& signature);
StepRecord step_record_base(int iteration, int step, int global_step, const Slot& slot,
                            const Classification& state, const TechniqueRow& technique);

}  // namespace mblast::optimize_detail
