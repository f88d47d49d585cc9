#pragma once
// The MAIC-RL loop (docs/ARCHITECTURE.md §1) over its four collaborators: the backend that judges,
// the knowledge base it learns into, the agents that write candidates, and the run directory that
// makes it resumable. `optimize()` wires real ones; tests pass a scripted backend and a fake LLM.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/judge.hpp"
#include "core/optimize_support.hpp"
#include "core/run_dir.hpp"
#include "core/selection.hpp"
#include "mblast/backend.hpp"
#include "mblast/kb.hpp"
#include "mblast/optimize.hpp"
#include "mblast/policy.hpp"
#include "mblast/run_summary.hpp"
#include "mblast/step_record.hpp"

namespace mblast {

// What a run recorded before it was interrupted, read back on --resume.
struct Resumed {
  std::vector<StepRecord> steps;
  std::size_t evaluations = 0;
  std::int64_t tokens = 0;
  double cost_usd = 0;
  double seconds = 0;
  static Resumed from(const RunDir& run);
};

// Set by a signal handler: the loop ends after the current step (status "interrupted").
extern std::atomic<bool> g_optimize_stop_requested;

class Loop {
 public:
  Loop(OptimizeOptions options, Backend& backend, KnowledgeBase& kb,
       optimize_detail::Agents& agents, RunDir& run, Resumed resumed, const ProgressFn& progress);

  // Baseline, then iterations of steps until a budget or the steps are spent; the run's summary.
  RunSummary run();

 private:
  struct Choice {
    std::size_t slot = 0;  // into slots_
    Classification state;
    TechniqueRow technique;
    optimize_detail::Base base;  // what the technique is applied to
    // A region step retrying what sped up the same computation before: that attempt.
    std::optional<AttemptRow> reused;
    std::string decided_by = "ucb";  // or "graph-first round", "region reuse"
    std::optional<ArmEvidence> arm;  // the selector's view of the chosen arm (ucb)
  };
  struct Scored {
    bool correct = false;
    bool skipped = false;  // a built-in with nothing to change: no candidate was judged
    std::optional<double> speedup;
    double reward = 0;
    bool improved = false;
    bool new_best = false;
    std::optional<std::string> selection_note;  // where speedup and time disagreed, what decided
  };
  struct Committed {
    std::string attempt_id;
    CriticOutcome critic;
  };

  void note(const std::string& text) {
    progress_({.kind = "note", .data = {{"text", text}}, .text = text});
  }
  void check_techniques() const;
  void baseline();
  void add_region_slots();
  void record_run_in_kb();
  void take_compile_baseline(const TechniqueRow& technique, bool on_reference,
                             const EvalResult& result);
  void set_compile_baseline(std::optional<double> compiled_ms, std::optional<double> eager_ms);
  void judge_compile_baseline();
  nlohmann::json baseline_extras() const;
  void restore(const std::vector<StepRecord>& steps);
  std::optional<std::string> budget_spent() const;

  // One step: choose -> produce -> score -> critic -> commit -> update, and its record.
  std::optional<StepRecord> step(int iteration, int step_in_iteration, int global, bool& stop,
                                 std::string& stop_reason);
  std::optional<Choice> choose(int global, std::string& why_none);
  std::optional<AttemptRow> region_reuse(const Slot& slot,
                                         const std::vector<TechniqueRow>& eligible,
                                         const SelectorConfig& selector) const;
  std::vector<optimize_detail::Evaluation> produce(const Choice& choice, int global);
  Scored score(const optimize_detail::Evaluation& final) const;
  TrajectoryStep trajectory_step(int global, const Choice& choice,
                                 const optimize_detail::Evaluation& final,
                                 const Scored& scored) const;
  std::optional<CriticVerdict> ask_the_critic(const TrajectoryStep& judged);
  std::optional<double> attempt_reward(const Choice& choice, const Scored& scored) const;
  void record_region_reuse(StepRecord& record, const Choice& choice, const Scored& scored);
  Committed commit(const Choice& choice,
                   const std::vector<optimize_detail::Evaluation>& evaluations,
                   const Scored& scored, int iteration, int step_in_iteration,
                   const std::optional<CriticVerdict>& verdict);
  void update(const Choice& choice, const optimize_detail::Evaluation& final, const Scored& scored,
              int global);
  StepRecord step_record(StepRecord record,
                         const std::vector<optimize_detail::Evaluation>& evaluations,
                         const Scored& scored, const Committed& committed, bool llm_critic,
                         std::chrono::steady_clock::time_point started);

  optimize_detail::Evaluation write_and_judge(const std::string& stem, const std::string& source,
                                              std::int64_t tokens, bool compile_baseline = false);
  std::vector<optimize_detail::Evaluation> llm_candidate(const TechniqueRow& technique,
                                                         const Slot& slot,
                                                         const Classification& state, int global);
  // The step's evaluations; the last is the step's candidate.
  std::vector<optimize_detail::Evaluation> builtin(const Choice& choice, int global);
  void prebuild_next(const Choice& choice, int global);
  std::optional<Choice> guess_next_choice(const Choice& choice, int global);
  // The graph-first round (loop_model_level.cpp, with add_region_slots).
  enum class GraphRound { off, pending, legal, illegal };
  std::optional<Choice> graph_round_choice(const Classification& state,
                                           const SelectorConfig& selector);
  void end_graph_round(const Choice& choice, const optimize_detail::Evaluation& final, bool faster);
  void restore_graph_round(const StepRecord& record);
  bool wraps_in_graph(const TechniqueRow& technique) const;
  // A whole-model CUDA graph chosen by the selector that becomes the best stays the outermost
  // wrapper, as a legal round's does: later built-ins are made under it, never over it. The
  // graph's step keeps what it wrapped as its `inner`; the caller passes only such a step.
  bool stays_outermost(const Choice& choice) const;
  void keep_the_graph_outermost(const TechniqueRow& technique);
  void drop_the_rounds_graph(std::vector<TechniqueRow>& techniques) const;
  // A "first" built-in with nothing to change in the problem's Model changes nothing under any
  // lineage either: after one such step it is not offered again in the run.
  void note_if_it_changes_nothing(const TechniqueRow& technique, Outcome outcome);
  void drop_what_changes_nothing(std::vector<TechniqueRow>& techniques) const;
  // The same known before any step: the backend checks the problem's Model for every "first"
  // built-in once, while the reference is judged (Backend::nothing_to_change).
  std::future<std::map<std::string, std::string>> start_nothing_to_change_check();
  void drop_first_builtins_with_nothing_to_change(
      const std::map<std::string, std::string>& why_by_technique);
  std::optional<std::string> graph_wrapped(const std::string& stem, const std::string& inner_source,
                                           std::filesystem::path& inner_file);
  // Inside a legal round: the built-in as it is, then inside the round's graph where its own
  // profile leaves the graph something to remove; the faster of the two last.
  std::vector<optimize_detail::Evaluation> judged_with_and_without_graph(const std::string& stem,
                                                                         const std::string& source);
  // Why the CUDA-graph built-in is not offered over a candidate with this profile, or empty.
  std::string graph_cannot_pay(const ProfileSignature& signature) const;
  CriticContext critic_context(const TrajectoryStep& judged) const;
  void accept(const optimize_detail::Evaluation& evaluation, const Choice& choice, int global);
  RunSummary finish(const std::string& status, const std::string& reason);
  void record_best(RunSummary& summary) const;
  // The run's LLM usage: this process's ledger plus what the run spent before a resume.
  struct Usage {
    std::int64_t input_tokens = 0, output_tokens = 0;  // this process's
    std::int64_t tokens = 0;                           // the run's, input and output
    std::optional<double> cost_usd;                    // none: a call had no price
    nlohmann::json report;                             // the ledger's report, run totals in it
  };
  Usage usage() const;
  double run_seconds() const;
  std::vector<double> run_eager_ms() const;
  optimize_detail::EagerTimes eager_times(std::optional<double> contender_eager_ms) const;
  std::size_t evaluations_total() const {
    return resumed_.evaluations + static_cast<std::size_t>(judge_.evaluations_run());
  }

  OptimizeOptions options_;
  Backend& backend_;
  KnowledgeBase& kb_;
  optimize_detail::Agents& agents_;
  RunDir& run_;
  Resumed resumed_;
  ProgressFn progress_;
  Judge judge_;
  std::string task_, hardware_, run_id_, problem_source_;
  EvalResult baseline_;
  std::vector<StateRow> states_;
  std::vector<Slot> slots_;
  optimize_detail::Current current_;
  std::optional<optimize_detail::BestCandidate> best_;
  optimize_detail::Tried tried_;
  bool predicting_ = false;  // choose() guessing the next step's choice for --prebuild: no log
  std::set<std::string> changes_nothing_;  // "first" built-ins with nothing to change here
  std::vector<TrajectoryStep> rollout_;    // this iteration's steps, for the critic
  std::vector<std::string> heavy_ops_;
  std::vector<std::string> problem_ops_;  // the baseline profile's op names
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // The device's one-time calibration (its ceilings, measured on a machine's first run and cached):
  // part of the run's wall, not of its time limit, so that the first run of a batch on a fresh
  // machine is not the one left without time.
  double uncounted_seconds_ = 0;
  void set_time_limit_deadline();
  void leave_calibration_out_of_the_time_limit();
  int steps_done_ = 0;
  std::vector<double> step_eager_ms_;  // eager's time in each step's final evaluation
  int correct_candidates_ = 0;
  std::vector<std::string> claims_shown_;  // by the actor of the step under way
  GraphRound graph_round_ = GraphRound::off;
};

}  // namespace mblast
