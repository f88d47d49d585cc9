#pragma once
// What one `mblast optimize` run ended with: built by the loop, printed by the CLI, written to the
// run directory's run.json. to_json() is docs/ARCHITECTURE.md §8's optimize --json result, the
// only JSON form; everything between the loop and the CLI reads the typed fields.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/eval_result.hpp"

namespace mblast {

// Eager's times over the evaluations of one run: each evaluation times eager in its own process,
// and a host-bound model's eager can differ between processes by 2x (benchmarks/h200/README.md,
// call 44), which each speedup, taken against the eager of its own evaluation, carries.
struct EagerRange {
  double min_ms = 0;
  double max_ms = 0;
  int evaluations = 0;

  // Over the given times; none when fewer than two.
  static std::optional<EagerRange> over(const std::vector<double>& times_ms);
  // run.json's form; none unless it holds two positive times.
  static std::optional<EagerRange> from_json(const nlohmann::json& object);
  nlohmann::json to_json() const;
  double ratio() const { return max_ms / min_ms; }
};

struct RunSummary {
  std::string status;  // "finished", "exhausted", "budget", "interrupted", "llm_error"
  std::string stop_reason;
  std::string task, backend, device, hardware, llm, run_id;
  std::filesystem::path problem, run_dir, kb;
  int steps = 0;
  std::size_t evaluations = 0;
  int correct_candidates = 0;
  std::optional<double> best_speedup;  // over speedup_baseline; none: nothing correct
  std::string best_technique;          // "reference" when nothing beat it
  std::optional<std::filesystem::path> best_file, kernelbench_file;
  std::optional<double> baseline_ms, baseline_cost;
  std::string speedup_baseline = "eager";
  std::vector<BaselineFigure> baselines;
  std::optional<double> best_ms;
  std::optional<double> best_eager_ms;  // eager timed beside the best, over which it is reckoned
  std::optional<EagerRange> eager_range;
  std::optional<double> compile_ms, speedup_vs_compile;
  // The speed-of-light estimate of the reference and SOL-ExecBench's score of the best, with the
  // eager time of the best's evaluation as T_b (a SOL-ExecBench problem: over its workloads).
  std::optional<double> sol_ms, sol_score;
  std::int64_t tokens = 0;
  std::optional<double> cost_usd;                       // none: a price is unknown
  nlohmann::json llm_usage = nlohmann::json::object();  // the LLM ledger's own report
  std::optional<Tolerance> tolerance;
  double seconds = 0;
  nlohmann::json baseline_extra = nlohmann::json::object();  // "shrink", "missing_baselines"

  bool correct() const { return best_speedup.has_value(); }
  bool best_is_reference() const { return correct() && best_technique == "reference"; }
  nlohmann::json to_json() const;
};

}  // namespace mblast
