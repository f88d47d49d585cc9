// Plot (e) of `mblast report --against`: the geometric mean of the running best against
// evaluations, this report's runs beside the other's.
#include <algorithm>

#include "report/compare_render.hpp"
#include "report/json_util.hpp"
#include "report/plots.hpp"

namespace mblast::report::plots {

namespace {

// The curve's values at evaluations 1, 2, ... as a step line.
std::vector<svg::Point> curve_line(const std::vector<double>& curve, const svg::Scale& x,
                                   const svg::Scale& y) {
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < curve.size(); ++i)
    points.emplace_back(static_cast<double>(i + 1), curve[i]);
  return step_line(points, static_cast<double>(curve.size()), x, y);
}

}  // namespace

std::string comparison_per_evaluation(const Comparison& comparison) {
  const auto curves = comparison_curves(comparison);
  svg::Canvas canvas(kWidth, 360, kComparisonTitle);
  svg::draw_title(canvas, kComparisonTitle,
                  "geometric mean of the running best over the problems correct in both (log "
                  "scale)");
  const svg::Frame frame{64, 70, kWidth - 200, 360 - 56};
  if (curves.self.empty()) {
    svg::draw_empty(canvas, frame, "no problem is correct in both");
    return canvas.str();
  }
  double lo = 1, hi = 1;
  for (const auto* curve : {&curves.self, &curves.other}) {
    for (double v : *curve) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  const double most = static_cast<double>(curves.self.size());
  const auto x = svg::Scale::linear(1, std::max(most, 2.0), frame.left, frame.right);
  const auto y = svg::Scale::log(lo / 1.15, hi * 1.15, frame.bottom, frame.top);
  svg::draw_axes(canvas, frame, x, {"evaluations", svg::linear_ticks(1, most, 6)}, y,
                 {"best speedup", speedup_ticks(y.lo(), y.hi())});
  const svg::Style self{"none", svg::palette()[0], 3, 1, ""};
  const svg::Style other{"none", svg::palette()[1], 3, 1, "6 4"};
  canvas.polyline(curve_line(curves.other, x, y), other,
                  "against: " + speedup_text(curves.other.back()));
  canvas.polyline(curve_line(curves.self, x, y), self,
                  "this report: " + speedup_text(curves.self.back()));
  svg::draw_legend(canvas, kWidth - 12, frame.top, {{"this report", self}, {"against", other}});
  return canvas.str();
}

}  // namespace mblast::report::plots
