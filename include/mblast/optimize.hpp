#pragma once
// `mblast optimize`: the MAIC-RL loop of docs/ARCHITECTURE.md §1 over one problem. Each step picks
// a slot, classifies its state, picks a technique by UCB over the KB, has the actor (or a built-in
// transform) write a candidate, repairs it with the fix agent when it fails, judges it, and
// writes the reward, the critic's claims and the implementation to the KB in one transaction.
// Everything a run produces lives in its run directory, which is enough to resume it.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/backend.hpp"
#include "mblast/judge_options.hpp"
#include "mblast/run_events.hpp"
#include "mblast/run_summary.hpp"
#include "mblast/step_record.hpp"

namespace mblast {

struct OptimizeOptions {
  std::filesystem::path problem;
  JudgeOptions judge;  // how every candidate is judged; judge.seed seeds the loop too
  std::string llm;     // --llm spec; empty: $MBLAST_LLM, the config file, the keys
  std::optional<std::filesystem::path> llm_config;
  std::string llm_record;  // append every LLM exchange to this cassette
  int iterations = 10;
  int steps = 10;                       // rollout steps per iteration
  int fix_attempts = 3;                 // repairs of a failing LLM candidate
  std::vector<std::string> techniques;  // restrict the selector to these ids (empty: all)
  std::optional<int> max_evaluations;
  std::optional<double> time_limit_minutes;
  std::optional<std::int64_t> max_tokens;
  std::optional<double> max_cost_usd;
  bool allow_bf16 = false;
  // Region windows of the Model (ModelBlaster's model-level optimizer) as slots beside the whole
  // model: built-ins that take a region (region compile, cuDNN autotuning) apply to one window
  // while the rest stays as the reference has it.
  bool regions = false;
  // A graph-first round (ModelBlaster): the first step judges the whole model in a CUDA graph;
  // where that is legal (correct), every later built-in candidate runs inside such a graph, so that
  // a region's or a transform's gain is measured where it will run.
  bool graph_first = false;
  // While a step is judged, the built-in the selector would choose next (if the step changes
  // nothing) is compiled in the background (Backend::prebuild), paused while a candidate is
  // timed; its evaluation then starts from a warm compile cache (CUDA GPUs).
  bool prebuild = false;
  // The weight of a KB attempt made on other hardware against one made here, in the technique
  // selector's statistics (SelectorConfig::other_hardware_weight): 0 ignores other hardware.
  double other_hardware_weight = 0.5;
  std::filesystem::path kb;
  std::filesystem::path out;  // the run directory; empty: ./mblast-runs/<task>-<time>
  int prestart = 0;           // workers kept started ahead; 0: the backend chooses (BackendContext)
  // CUDA GPUs: judge through the eval server (cuda/eval_server.hpp), whose workers stay started
  // between the runs of a batch. How candidates reach the judge, not what it measures: not
  // recorded in the run's options.
  bool eval_server = true;
};

// What the loop reports while it runs, for the progress line and logs. `data` is the event as the
// run's log.txt records it; readers take the typed field of the event's kind.
struct ProgressEvent {
  std::string kind;  // "start", "baseline", "step_start", "step", "note", "end"
  nlohmann::json data;
  std::optional<RunStart> start;        // "start"
  std::optional<RunBaseline> baseline;  // "baseline"
  std::optional<StepRecord> step;       // "step_start" (the choice) and "step" (the whole record)
  std::optional<RunSummary> summary;    // "end"
  std::string text;                     // "note"
};
using ProgressFn = std::function<void(const ProgressEvent&)>;

// Runs a new loop; its summary's to_json() is docs/ARCHITECTURE.md §8's optimize --json result.
// Throws mblast::Error (exit 2) for unusable input. `backends` are the rows the CLI links
// (backend_registry()); the core links none of them.
RunSummary optimize(OptimizeOptions options, const BackendRows& backends,
                    const ProgressFn& progress);

// Continues the run in `run_dir` with the options it was started with; finished steps and
// evaluations are not repeated. `overrides` (keys of options_to_json, e.g. "iterations" or
// "time_limit_minutes") replace recorded options, so that a run stopped by a budget can go on.
RunSummary resume_optimize(const std::filesystem::path& run_dir, const nlohmann::json& overrides,
                           const BackendRows& backends, const ProgressFn& progress);

// Asks a running loop to stop after its current step (safe to call from a signal handler); the
// run ends with status "interrupted" and can be resumed.
void request_optimize_stop();

// Options to and from the run directory's config.json.
nlohmann::json options_to_json(const OptimizeOptions& options);
// The options the run in `run_dir` recorded (its config.json); throws when it holds no run.
nlohmann::json recorded_options(const std::filesystem::path& run_dir);
OptimizeOptions options_from_json(const nlohmann::json& json);

}  // namespace mblast
