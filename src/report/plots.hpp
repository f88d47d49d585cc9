#pragma once
// The report's plots, each a self-contained <svg> element 800 pixels wide.
#include <string>
#include <vector>

#include "mblast/report.hpp"
#include "report/svg.hpp"

namespace mblast::report::plots {

inline constexpr const char* kHistogramTitle = "Speedup distribution";
inline constexpr const char* kFastPTitle = "fast_p over p";
inline constexpr const char* kTrajectoryTitle = "Best speedup per evaluation";
inline constexpr const char* kTechniquesTitle = "Technique win rates by state";
inline constexpr const char* kComparisonTitle = "Best speedup per evaluation, side by side";
inline constexpr double kWidth = 800;

// (a) Best speedups of the correct problems in log-scale bins, vs eager and vs torch.compile.
std::string speedup_histogram(const Metrics& metrics);
// (b) fast_p for p from 0 to 3.
std::string fast_p_curve(const Metrics& metrics);
// (c) Running best speedup against evaluations, one line per problem, and their median.
std::string speedup_per_evaluation(const std::vector<ProblemRow>& rows, const Metrics& metrics);
// (d) Per (state, technique): tries and the share that were correct and improved.
std::string technique_heatmap(const TechniqueStats& stats);
// (e) With --against: the geometric mean of the running best per evaluation on both sides.
std::string comparison_per_evaluation(const Comparison& comparison);

// A running best as a step line: each value held until the next point, the last one until `end`.
std::vector<svg::Point> step_line(const std::vector<std::pair<double, double>>& points, double end,
                                  const svg::Scale& x, const svg::Scale& y);

// Log-scale ticks for [lo, hi]: powers of two, or rounder values when the range is narrow.
std::vector<svg::Tick> speedup_ticks(double lo, double hi);

}  // namespace mblast::report::plots
