// Plot (c): running best speedup against evaluations, one line per problem, and the median.
#include <algorithm>
#include <cmath>

#include "mblast/support.hpp"
#include "report/json_util.hpp"
#include "report/plots.hpp"

namespace mblast::report::plots {

namespace {

constexpr std::size_t kNamedLines = 8;  // more problems than this: grey lines, no names

struct Line {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (evaluations, best), best non-decreasing
  double end = 0;                                 // evaluations at the run's end
};

std::vector<Line> lines_of(const std::vector<ProblemRow>& rows) {
  std::vector<Line> lines;
  for (const auto& row : rows) {
    if (row.trajectory.empty()) continue;
    Line line{row.task, row.trajectory,
              std::max(row.trajectory.back().first, static_cast<double>(row.evaluations))};
    lines.push_back(std::move(line));
  }
  return lines;
}

// The best so far at `x`, held after the run's end; nullopt before its first correct candidate.
std::optional<double> value_at(const Line& line, double x) {
  std::optional<double> value;
  for (const auto& [at, best] : line.points) {
    if (at > x) break;
    value = best;
  }
  return value;
}

std::vector<std::pair<double, double>> median_line(const std::vector<Line>& lines) {
  std::vector<double> xs;
  for (const auto& line : lines) {
    for (const auto& point : line.points) xs.push_back(point.first);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  std::vector<std::pair<double, double>> median;
  for (double x : xs) {
    std::vector<double> values;
    for (const auto& line : lines) {
      if (auto v = value_at(line, x)) values.push_back(*v);
    }
    median.emplace_back(x, percentile(std::move(values), 0.5));
  }
  return median;
}

}  // namespace

std::vector<svg::Point> step_line(const std::vector<std::pair<double, double>>& points, double end,
                                  const svg::Scale& x, const svg::Scale& y) {
  std::vector<svg::Point> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i > 0) out.emplace_back(x(points[i].first), y(points[i - 1].second));
    out.emplace_back(x(points[i].first), y(points[i].second));
  }
  if (!points.empty() && end > points.back().first) {
    out.emplace_back(x(end), y(points.back().second));
  }
  return out;
}

namespace {

std::string shortened(const std::string& text, std::size_t most) {
  return text.size() <= most ? text : text.substr(0, most - 1) + "\u2026";
}

}  // namespace

std::string speedup_per_evaluation(const std::vector<ProblemRow>& rows, const Metrics& metrics) {
  const auto lines = lines_of(rows);
  const bool named = lines.size() <= kNamedLines;
  std::vector<svg::LegendItem> legend;
  for (std::size_t i = 0; named && i < lines.size(); ++i) {
    legend.push_back({shortened(lines[i].label, 30),
                      svg::Style{"none", svg::palette()[i % svg::palette().size()], 2, 1, ""}});
  }
  if (!named) {
    legend.push_back({"each problem (" + std::to_string(lines.size()) + ")",
                      svg::Style{"none", "#5b84b1", 1.2, 0.5, ""}});
  }
  const bool with_median = lines.size() >= 2;
  if (with_median) legend.push_back({"median", svg::Style{"none", "#111", 3, 1, ""}});
  double legend_width = 0;
  for (const auto& item : legend) {
    legend_width = std::max(legend_width, svg::text_width(item.label, 11) + 46);
  }

  svg::Canvas canvas(kWidth, 400, kTrajectoryTitle);
  const svg::Frame frame{64, 70, kWidth - 24 - legend_width - 12, 400 - 56};
  svg::draw_title(canvas, kTrajectoryTitle,
                  "running best speedup over " + metrics.vs_eager.baseline +
                      " (log scale); a line starts at its first correct candidate");
  if (lines.empty()) {
    svg::draw_empty(canvas, svg::Frame{64, 70, kWidth - 24, 400 - 56},
                    "no run has a correct candidate yet");
    return canvas.str();
  }
  double lo = 1, hi = 1, most = 1;
  for (const auto& line : lines) {
    for (const auto& [at, best] : line.points) {
      lo = std::min(lo, best);
      hi = std::max(hi, best);
    }
    most = std::max(most, line.end);
  }
  const auto x_ticks = svg::linear_ticks(0, most, 6);
  const auto x = svg::Scale::linear(0, most, frame.left, frame.right);
  const auto y = svg::Scale::log(lo / 1.15, hi * 1.15, frame.bottom, frame.top);
  svg::draw_axes(canvas, frame, x, {"evaluations", x_ticks}, y,
                 {"best speedup", speedup_ticks(y.lo(), y.hi())});
  canvas.line(frame.left, y(1), frame.right, y(1), svg::Style{"none", "#D55E00", 1.2, 1, "5 4"});

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    const svg::Style style =
        named ? svg::Style{"none", svg::palette()[i % svg::palette().size()], 2, 0.9, ""}
              : svg::Style{"none", "#5b84b1", 1.2, 0.45, ""};
    const std::string tooltip = line.label + ": " + speedup_text(line.points.back().second);
    canvas.polyline(step_line(line.points, line.end, x, y), style, tooltip);
    if (!named) continue;
    for (const auto& [at, best] : line.points) {
      canvas.circle(x(at), y(best), 3, svg::Style{style.stroke, "#fff", 1, 1, ""}, tooltip);
    }
  }
  if (with_median) {
    canvas.polyline(step_line(median_line(lines), most, x, y), svg::Style{"none", "#111", 3, 1, ""},
                    "median over the problems with a correct candidate so far");
  }
  svg::draw_legend(canvas, kWidth - 12, frame.top, legend);
  return canvas.str();
}

}  // namespace mblast::report::plots
