#include "mblast/run_summary.hpp"

#include <algorithm>

#include "mblast/json_fields.hpp"

namespace mblast {

std::optional<EagerRange> EagerRange::over(const std::vector<double>& times_ms) {
  if (times_ms.size() < 2) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(times_ms.begin(), times_ms.end());
  return EagerRange{*lo, *hi, static_cast<int>(times_ms.size())};
}

std::optional<EagerRange> EagerRange::from_json(const nlohmann::json& object) {
  if (!object.is_object()) return std::nullopt;
  EagerRange range;
  read_lenient(object, "min_ms", range.min_ms);
  read_lenient(object, "max_ms", range.max_ms);
  read_lenient(object, "evaluations", range.evaluations);
  if (!(range.min_ms > 0 && range.max_ms >= range.min_ms)) return std::nullopt;
  return range;
}

nlohmann::json EagerRange::to_json() const {
  return {{"min_ms", min_ms}, {"max_ms", max_ms}, {"evaluations", evaluations}};
}

nlohmann::json RunSummary::to_json() const {
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& b : baselines) figures.push_back(b.to_json());
  nlohmann::json j = {{"status", status},
                      {"stop_reason", stop_reason},
                      {"task", task},
                      {"problem", problem.string()},
                      {"backend", backend},
                      {"device", device},
                      {"hardware", hardware},
                      {"llm", llm},
                      {"run_dir", run_dir.string()},
                      {"run_id", run_id},
                      {"kb", kb.string()},
                      {"steps", steps},
                      {"evaluations", evaluations},
                      {"correct_candidates", correct_candidates},
                      {"correct", correct()},
                      {"best_speedup", optional_json(best_speedup)},
                      {"best_technique", correct() ? nlohmann::json(best_technique) : nullptr},
                      {"best_is_reference", best_is_reference()},
                      {"best_file", optional_json(best_file)},
                      {"kernelbench_file", optional_json(kernelbench_file)},
                      {"baseline_ms", optional_json(baseline_ms)},
                      {"baseline_cost", optional_json(baseline_cost)},
                      {"speedup_baseline", speedup_baseline},
                      {"baselines", figures},
                      {"best_ms", optional_json(best_ms)},
                      {"best_eager_ms", optional_json(best_eager_ms)},
                      {"eager_range", eager_range ? eager_range->to_json() : nlohmann::json()},
                      {"compile_ms", optional_json(compile_ms)},
                      {"speedup_vs_compile", optional_json(speedup_vs_compile)},
                      {"sol_ms", optional_json(sol_ms)},
                      {"sol_score", optional_json(sol_score)},
                      {"tokens", tokens},
                      {"cost_usd", optional_json(cost_usd)},
                      {"llm_usage", llm_usage},
                      {"tolerance", tolerance ? tolerance->to_json() : nlohmann::json()},
                      {"seconds", seconds}};
  for (const auto& [key, value] : baseline_extra.items()) j[key] = value;
  return j;
}

}  // namespace mblast
