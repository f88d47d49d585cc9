// KernelBench's metrics: correctness rate, fast_p and the geometric-mean speedup.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "mblast/report.hpp"
#include "mblast/support.hpp"
#include "report/json_util.hpp"

namespace mblast::report {

double fast_p(const std::vector<double>& correct_speedups, std::int64_t problems, double p) {
  if (problems <= 0) return 0;
  const auto fast = std::count_if(correct_speedups.begin(), correct_speedups.end(),
                                  [p](double s) { return s > p; });
  return static_cast<double>(fast) / static_cast<double>(problems);
}

std::optional<double> geometric_mean(const std::vector<double>& values) {
  double sum = 0;
  std::int64_t n = 0;
  for (double v : values) {
    if (v <= 0 || !std::isfinite(v)) continue;
    sum += std::log(v);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::exp(sum / static_cast<double>(n));
}

namespace {

SpeedupMetrics speedup_metrics(std::string baseline, std::vector<double> speedups,
                               std::int64_t problems) {
  SpeedupMetrics m;
  m.baseline = std::move(baseline);
  m.problems = problems;
  std::sort(speedups.begin(), speedups.end());
  m.correct = static_cast<std::int64_t>(speedups.size());
  for (const auto& [name, p] : {std::pair{"fast_0", 0.0}, std::pair{"fast_1", 1.0},
                                std::pair{"fast_1.5", 1.5}, std::pair{"fast_2", 2.0}}) {
    m.fast_p[name] = fast_p(speedups, problems, p);
  }
  m.geomean = geometric_mean(speedups);
  m.speedups = std::move(speedups);
  return m;
}

std::string baseline_name(const std::map<std::string, std::int64_t>& baselines) {
  if (baselines.empty()) return "eager";
  if (baselines.size() == 1) return baselines.begin()->first;
  std::string joined = "mixed:";
  for (const auto& [name, n] : baselines) joined += " " + name;
  return joined;
}

void add_tolerance(nlohmann::json& tolerances, const nlohmann::json& tolerance) {
  const auto atol = number_or_null(tolerance, "atol");
  const auto rtol = number_or_null(tolerance, "rtol");
  if (!atol && !rtol) return;
  for (auto& t : tolerances) {
    if (number_or_null(t, "atol") == atol && number_or_null(t, "rtol") == rtol) {
      t["problems"] = t["problems"].get<std::int64_t>() + 1;
      return;
    }
  }
  tolerances.push_back({{"atol", atol ? nlohmann::json(*atol) : nlohmann::json()},
                        {"rtol", rtol ? nlohmann::json(*rtol) : nlohmann::json()},
                        {"problems", 1}});
}

// Against each problem's best-of: over every problem whose best-of is known, run or not.
void add_best_of_metrics(Metrics& m, const std::vector<ProblemRow>& rows) {
  std::vector<double> levels, ratios;
  for (const auto& row : rows) {
    if (!row.best_of) continue;
    levels.push_back(*row.best_of);
    if (row.correct && row.speedup_vs_best_of) ratios.push_back(*row.speedup_vs_best_of);
  }
  m.vs_best_of =
      speedup_metrics("best-of", std::move(ratios), static_cast<std::int64_t>(levels.size()));
  m.best_of_geomean = geometric_mean(levels);
}

}  // namespace

Metrics compute_metrics(const std::vector<ProblemRow>& rows) {
  Metrics m;
  m.problems = static_cast<std::int64_t>(rows.size());
  std::vector<double> eager, compiled, scores;
  std::int64_t compile_problems = 0;
  for (const auto& row : rows) {
    if (row.status == "not run") {
      ++m.not_run;
      continue;
    }
    if (row.ran)
      ++m.ran;
    else
      ++m.unfinished;
    if (row.correct) ++m.correct;
    if (row.correct && row.speedup) eager.push_back(*row.speedup);
    if (row.compile_known) ++compile_problems;
    if (row.correct && row.sol_score) scores.push_back(*row.sol_score);
    if (row.correct && row.compile_known && row.speedup_vs_compile) {
      compiled.push_back(*row.speedup_vs_compile);
    }
    ++m.policies[string_or(row.tolerance, "policy", "unknown")];
    if (!row.hardware.empty()) ++m.hardware[row.hardware];
    if (!row.backend.empty()) ++m.backends[row.backend];
    if (row.ran) ++m.baselines[row.speedup_baseline];
    add_tolerance(m.tolerances, row.tolerance);
    if (row.tolerance.is_object() && row.tolerance.contains("widened_by_eager") &&
        row.tolerance["widened_by_eager"] == true) {
      ++m.widened_by_eager;
    }
    // A run whose best stayed the reference has no winning technique to have chosen first.
    if (!row.first_choice.empty() && !row.best_technique.empty() &&
        row.best_technique != "reference") {
      ++m.first_choice_runs;
      if (row.first_choice == row.best_technique) ++m.first_choice_won;
    }
    m.evaluations += row.evaluations;
    m.tokens += row.tokens;
    if (row.cost_usd) m.cost_usd = m.cost_usd.value_or(0) + *row.cost_usd;
    m.seconds += row.seconds.value_or(0);
  }
  m.correctness_rate =
      m.problems ? static_cast<double>(m.correct) / static_cast<double>(m.problems) : 0;
  m.vs_eager = speedup_metrics(baseline_name(m.baselines), std::move(eager), m.problems);
  m.vs_compile = speedup_metrics("torch.compile", std::move(compiled), compile_problems);
  add_best_of_metrics(m, rows);
  m.sol_scored = static_cast<std::int64_t>(scores.size());
  if (!scores.empty()) m.sol_score_median = percentile(std::move(scores), 0.5);
  return m;
}

}  // namespace mblast::report
