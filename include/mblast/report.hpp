#pragma once
// `mblast report`: KernelBench metrics, a per-problem table and plots for one run directory or a
// batch directory (docs/ARCHITECTURE.md §7). Loading, metrics and rendering are separate so tests
// and scripts can use each part.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/run_summary.hpp"

namespace mblast::report {

// One problem: a finished run, an unfinished one, or one listed in batch.json that never ran.
// A state the run's steps were classified into (steps.jsonl "state"), with the evidence of the
// first step in it (its "state_evidence": each condition's metric, value and threshold).
struct StateVisit {
  std::string state;
  std::string evidence;
  std::int64_t steps = 0;
  std::int64_t first_step = 0;
  // With --profile ncu, at the first step: the state Nsight Compute implies, and why (or why
  // ncu gave no numbers).
  std::optional<std::string> ncu_state;
  std::string ncu_evidence;
};

// A step whose final candidate failed (steps.jsonl: outcome other than correct or skipped).
struct FailedStep {
  std::int64_t step = 0;
  std::string technique;
  std::string outcome;  // "incorrect", "runtime_error", ...
  std::string error;    // the judge's first line
};

struct ProblemRow {
  std::string name;               // the batch's name for it (file stem), or the run's task
  std::string task;               // e.g. "level1/19_ReLU"
  std::string status;             // run.json status, "unfinished" or "not run"
  bool ran = false;               // a run.json exists for it
  bool correct = false;           // a verified candidate exists
  std::optional<double> speedup;  // best_speedup over speedup_baseline
  std::optional<double> speedup_vs_compile;  // over torch.compile of the reference
  bool compile_known = false;                // the reference's torch.compile time was measured
  std::optional<double> sol_score;           // SOL-ExecBench's score of the best (run.json)
  std::string speedup_baseline;              // "eager", "torch_cpu", ...
  std::int64_t evaluations = 0;
  std::int64_t tokens = 0;
  std::optional<double> cost_usd;
  std::optional<double> seconds;
  std::string best_technique;
  // The technique the selector chose at the run's first step of its own ("ucb"; for runs recorded
  // before steps said why, the first step's): whether the state classifier sent the run to its
  // eventual winner (best_technique) first.
  std::string first_choice;
  std::string backend;
  std::string hardware;
  std::string run_id;
  std::string run_dir;
  std::string kb;  // the KB the run wrote to (run.json "kb")
  nlohmann::json tolerance;
  // Running best speedup after each step that had one: (evaluations so far, best speedup).
  std::vector<std::pair<double, double>> trajectory;
  std::vector<StateVisit> states;    // in the order the steps first reached them
  std::vector<FailedStep> failures;  // in step order
  // The batch's controls (baselines.jsonl): the best of eager (1.0) and each correct control's
  // speedup over eager; known when the task has at least one line.
  std::optional<double> best_of;
  std::vector<std::string> best_of_measured;  // the controls with a line, sorted
  std::optional<double> speedup_vs_best_of;   // speedup / best_of, for a correct row
  std::optional<EagerRange> eager_range;      // eager's times over the run's evaluations
};

struct Report {
  std::filesystem::path dir;
  std::string kind;      // "run" or "batch"
  nlohmann::json batch;  // batch.json, or null
  std::vector<ProblemRow> rows;
  std::vector<std::string> warnings;  // skipped lines, missing files: said, not fatal
};

// Reads a run directory (run.json) or a batch directory (results.jsonl and/or runs/; its
// baselines.jsonl gives the best-of controls). Throws input_error (exit 2) when DIR is neither
// or its run.json is malformed.
Report load_report(const std::filesystem::path& dir);

// Metrics over one kind of speedup, as KernelBench defines them.
struct SpeedupMetrics {
  std::string baseline;       // what the speedups are over: "eager", "torch.compile", ...
  std::int64_t problems = 0;  // the denominator of fast_p
  std::int64_t correct = 0;   // correct problems with a speedup of this kind
  std::map<std::string, double> fast_p;  // "fast_0", "fast_1", "fast_1.5", "fast_2"
  std::optional<double> geomean;         // over the correct problems
  std::vector<double> speedups;          // of the correct problems, sorted
};

struct Metrics {
  std::int64_t problems = 0;  // every problem, run or not
  std::int64_t ran = 0;
  std::int64_t not_run = 0;     // listed in batch.json, no run folder
  std::int64_t unfinished = 0;  // a run folder without run.json
  std::int64_t correct = 0;
  double correctness_rate = 0;
  SpeedupMetrics vs_eager;                 // best_speedup (over each run's speedup_baseline)
  SpeedupMetrics vs_compile;               // over the problems whose torch.compile time is known
  SpeedupMetrics vs_best_of;               // over the problems whose best-of is known
  std::optional<double> best_of_geomean;   // the controls' own level over eager, on those problems
  std::optional<double> sol_score_median;  // over the correct problems with a SOL score
  std::int64_t sol_scored = 0;
  std::map<std::string, std::int64_t> policies, hardware, backends, baselines;
  nlohmann::json tolerances = nlohmann::json::array();  // [{atol, rtol, problems}]
  std::int64_t widened_by_eager = 0;
  // Runs with a first choice and a winning technique (not the reference), and those where the two
  // are the same.
  std::int64_t first_choice_runs = 0, first_choice_won = 0;
  std::int64_t evaluations = 0, tokens = 0;
  std::optional<double> cost_usd;
  double seconds = 0;
};

// One cause of failed steps across a report's runs: the judge's error with each run's own details
// (paths, numbers, output indices) left out, so that one bug across problems reads as one line.
struct FailureCause {
  std::string outcome;
  std::string cause;
  std::int64_t steps = 0;
  std::vector<std::string> problems;    // in report order, each once
  std::vector<std::string> techniques;  // sorted, each once
};

// The error's cause as failure_causes groups it.
std::string failure_cause(const std::string& error);
// The failed steps of every row by cause, the most frequent first.
std::vector<FailureCause> failure_causes(const std::vector<ProblemRow>& rows);

// fast_p: the fraction of `problems` that are correct and have a speedup > p.
double fast_p(const std::vector<double>& correct_speedups, std::int64_t problems, double p);
std::optional<double> geometric_mean(const std::vector<double>& values);
Metrics compute_metrics(const std::vector<ProblemRow>& rows);

// Technique win rates from the KB: per (state, technique), steps tried and how many were correct
// and improved on the best before (reward > 0).
struct TechniqueStat {
  std::string state;
  std::string technique;
  std::int64_t tries = 0;
  std::int64_t correct = 0;
  std::int64_t wins = 0;
  double win_rate() const {
    return tries ? static_cast<double>(wins) / static_cast<double>(tries) : 0.0;
  }
};

struct TechniqueStats {
  std::string scope;                // "runs": attempts of these runs; "kb": the whole KB
  std::vector<std::string> kbs;     // files read
  std::vector<TechniqueStat> rows;  // most tried first
  std::vector<std::string> notes;   // KBs that could not be read, and why
};

// `kb` set: every attempt in that KB (input_error if it cannot be opened). Otherwise the
// attempts of the report's runs, from the KB each run.json names; unreadable ones become notes.
TechniqueStats technique_stats(const Report& report,
                               const std::optional<std::filesystem::path>& kb);

// Two reports of the same problems side by side (`mblast report DIR --against OTHER`), e.g. runs
// that started from a filled knowledge base against the same runs from an empty one.
inline constexpr double kNearBestShare = 0.95;

struct ComparedSide {
  bool correct = false;
  std::optional<double> best;  // the run's final best speedup, where it is correct
  // Evaluations until the running best first came within kNearBestShare of the final best; the
  // reference's own evaluation (the first) holds 1.0x. Unknown for a run without a correct one.
  std::optional<std::int64_t> evaluations_to_near_best;
  std::int64_t evaluations = 0;
  std::optional<double> seconds;
  std::vector<std::pair<double, double>> trajectory;  // as ProblemRow::trajectory
};

struct ComparedProblem {
  std::string task;
  std::string group;  // the task's folder ("level1"), else "problems"
  ComparedSide self, other;
};

// Over the problems of a group that are correct on both sides.
struct ComparedGroup {
  std::string name;  // a level, or "all"
  std::int64_t problems = 0;
  double mean_evaluations_self = 0, mean_evaluations_other = 0;
  std::optional<double> geomean_self, geomean_other;
  double seconds_self = 0, seconds_other = 0;
  std::optional<double> evaluations_ratio() const {
    if (mean_evaluations_other <= 0) return std::nullopt;
    return mean_evaluations_self / mean_evaluations_other;
  }
};

struct Comparison {
  std::filesystem::path other_dir;
  std::vector<ComparedProblem> problems;  // those both reports hold, in this report's order
  std::vector<ComparedGroup> groups;      // each group with a problem, then "all"
  std::vector<std::string> only_here, only_there;  // tasks one side lacks
};

// The first evaluation count at which `trajectory` reaches kNearBestShare of `best`.
std::int64_t evaluations_to_near_best(const std::vector<std::pair<double, double>>& trajectory,
                                      double best, std::int64_t evaluations);
Comparison compare_reports(const Report& self, const Report& other);
// The geometric mean over `sides` of the running best after each evaluation count up to `most`
// (a run holds 1.0x before its first step and its last best after its end).
std::vector<double> geomean_best_per_evaluation(const std::vector<const ComparedSide*>& sides,
                                                std::int64_t most);

// Renderings.
// With `against`, each adds the comparison.
nlohmann::json to_json(const Report& report, const Metrics& metrics, const TechniqueStats& stats,
                       const Comparison* against = nullptr);
std::string to_markdown(const Report& report, const Metrics& metrics, const TechniqueStats& stats,
                        const Comparison* against = nullptr);
std::string to_html(const Report& report, const Metrics& metrics, const TechniqueStats& stats,
                    const Comparison* against = nullptr);

}  // namespace mblast::report
