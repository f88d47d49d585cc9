// Plots (a) the speedup histogram and (b) fast_p over p.
#include <algorithm>
#include <cmath>

#include "report/json_util.hpp"
#include "report/plots.hpp"

namespace mblast::report::plots {

namespace {

constexpr double kBlue = 0;    // palette index: vs eager
constexpr double kOrange = 1;  // palette index: vs torch.compile

const std::string& color(double index) { return svg::palette()[static_cast<std::size_t>(index)]; }

// Half powers of two: bin k holds speedups in [2^(k/2), 2^((k+1)/2)).
int half_octave(double speedup) { return static_cast<int>(std::floor(2 * std::log2(speedup))); }

std::string bin_edge_text(int k) { return short_number(std::pow(2.0, k / 2.0), 3) + "x"; }

std::vector<int> bin_counts(const std::vector<double>& speedups, int first, int bins) {
  std::vector<int> counts(static_cast<std::size_t>(bins), 0);
  for (double s : speedups) {
    const int index = std::clamp(half_octave(s) - first, 0, bins - 1);
    ++counts[static_cast<std::size_t>(index)];
  }
  return counts;
}

void one_x_line(svg::Canvas& canvas, const svg::Frame& frame, double x, const std::string& label) {
  canvas.line(x, frame.top, x, frame.bottom, svg::Style{"none", "#D55E00", 1.5, 1, "5 4"});
  svg::Font font;
  font.size = 11;
  font.fill = "#D55E00";
  canvas.text(x + 4, frame.top + 12, label, font);
}

}  // namespace

std::vector<svg::Tick> speedup_ticks(double lo, double hi) {
  auto ticks = svg::log2_ticks(lo, hi);
  if (ticks.size() >= 3) return ticks;
  ticks.clear();
  for (const auto& tick : svg::linear_ticks(lo, hi, 5)) {
    if (tick.value > 0) ticks.push_back({tick.value, tick.label + "x"});
  }
  return ticks;
}

std::string speedup_histogram(const Metrics& metrics) {
  const auto& eager = metrics.vs_eager.speedups;
  const auto& compiled = metrics.vs_compile.speedups;
  svg::Canvas canvas(kWidth, 380, kHistogramTitle);
  const svg::Frame frame{64, 70, kWidth - 24, 380 - 56};
  svg::draw_title(canvas, kHistogramTitle,
                  "best speedup of each correct problem, in bins of half a power of two");
  std::vector<double> all = eager;
  all.insert(all.end(), compiled.begin(), compiled.end());
  if (all.empty()) {
    svg::draw_empty(canvas, frame, "no correct problem, so no speedup to show");
    return canvas.str();
  }
  const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  const int first = std::clamp(std::min(half_octave(*lo), -2), -16, 14);
  const int last = std::clamp(std::max(half_octave(*hi) + 1, 2), first + 1, 16);
  const int bins = last - first;
  const auto x = svg::Scale::log(std::pow(2.0, first / 2.0), std::pow(2.0, last / 2.0), frame.left,
                                 frame.right);
  const auto eager_counts = bin_counts(eager, first, bins);
  const auto compile_counts = bin_counts(compiled, first, bins);
  const int most = std::max(*std::max_element(eager_counts.begin(), eager_counts.end()),
                            *std::max_element(compile_counts.begin(), compile_counts.end()));
  auto y_ticks = svg::linear_ticks(0, std::max(most, 1), std::min(std::max(most, 1), 5));
  const auto y = svg::Scale::linear(0, y_ticks.back().value, frame.bottom, frame.top);
  svg::draw_axes(canvas, frame, x, {"best speedup (log scale)", speedup_ticks(x.lo(), x.hi())}, y,
                 {"problems", y_ticks});

  const bool both = !eager.empty() && !compiled.empty();
  for (int b = 0; b < bins; ++b) {
    const double left = x(std::pow(2.0, (first + b) / 2.0)) + 2;
    const double right = x(std::pow(2.0, (first + b + 1) / 2.0)) - 2;
    const double w = both ? (right - left) / 2 : right - left;
    const std::string range = bin_edge_text(first + b) + " to " + bin_edge_text(first + b + 1);
    const auto i = static_cast<std::size_t>(b);
    if (eager_counts[i] > 0) {
      canvas.rect(
          left, y(eager_counts[i]), w, frame.bottom - y(eager_counts[i]),
          svg::Style{color(kBlue), "none", 1, 1, ""},
          range + ": " + std::to_string(eager_counts[i]) + " vs " + metrics.vs_eager.baseline);
    }
    if (compile_counts[i] > 0) {
      canvas.rect(both ? left + w : left, y(compile_counts[i]), w,
                  frame.bottom - y(compile_counts[i]), svg::Style{color(kOrange), "none", 1, 1, ""},
                  range + ": " + std::to_string(compile_counts[i]) + " vs torch.compile");
    }
  }
  one_x_line(canvas, frame, x(1.0), "1x");
  std::vector<svg::LegendItem> legend;
  if (!eager.empty()) {
    legend.push_back({"vs " + metrics.vs_eager.baseline + " (" + std::to_string(eager.size()) + ")",
                      svg::Style{color(kBlue), "none", 1, 1, ""}, true});
  }
  if (!compiled.empty()) {
    legend.push_back({"vs torch.compile (" + std::to_string(compiled.size()) + ")",
                      svg::Style{color(kOrange), "none", 1, 1, ""}, true});
  }
  svg::draw_legend(canvas, frame.right, 8, legend);
  return canvas.str();
}

namespace {

// fast_p as a step line over p in [0, 3]: it drops just after each speedup.
std::vector<svg::Point> fast_p_steps(const SpeedupMetrics& m, const svg::Scale& x,
                                     const svg::Scale& y) {
  std::vector<svg::Point> points;
  double value = fast_p(m.speedups, m.problems, 0);
  points.emplace_back(x(0), y(value));
  for (double s : m.speedups) {
    if (s <= 0 || s >= 3) continue;
    const double after = fast_p(m.speedups, m.problems, s);
    if (after == value) continue;
    points.emplace_back(x(s), y(value));
    points.emplace_back(x(s), y(after));
    value = after;
  }
  points.emplace_back(x(3), y(value));
  return points;
}

// Dots at p = 0, 1, 1.5 and 2 (values on hover), with their values written when `labelled`.
void marks(svg::Canvas& canvas, const SpeedupMetrics& m, const svg::Scale& x, const svg::Scale& y,
           const std::string& fill, bool labelled) {
  svg::Font font;
  font.size = 10.5;
  font.fill = fill;
  font.halo = true;
  for (const auto& [name, p] : {std::pair{"fast_0", 0.0}, std::pair{"fast_1", 1.0},
                                std::pair{"fast_1.5", 1.5}, std::pair{"fast_2", 2.0}}) {
    const double value = m.fast_p.at(name);
    canvas.circle(x(p), y(value), 3.5, svg::Style{fill, "#fff", 1, 1, ""},
                  std::string(name) + " = " + percent_text(value));
    if (labelled) canvas.text(x(p) + 5, y(value) - 6, percent_text(value), font);
  }
}

}  // namespace

std::string fast_p_curve(const Metrics& metrics) {
  svg::Canvas canvas(kWidth, 380, kFastPTitle);
  const svg::Frame frame{64, 70, kWidth - 24, 380 - 56};
  const std::string subtitle = "correct and more than p times faster, as a share of all problems";
  svg::draw_title(canvas, kFastPTitle, subtitle);
  const auto x = svg::Scale::linear(0, 3, frame.left, frame.right);
  const auto y = svg::Scale::linear(0, 1, frame.bottom, frame.top);
  std::vector<svg::Tick> y_ticks;
  for (double v : {0.0, 0.25, 0.5, 0.75, 1.0}) y_ticks.push_back({v, percent_text(v)});
  svg::draw_axes(canvas, frame, x, {"p (speedup threshold)", svg::linear_ticks(0, 3, 6)}, y,
                 {"fast_p", y_ticks});
  canvas.line(x(1), frame.top, x(1), frame.bottom, svg::Style{"none", "#999", 1, 1, "5 4"});
  if (metrics.problems == 0) {
    svg::draw_empty(canvas, frame, "no problems");
    return canvas.str();
  }
  std::vector<svg::LegendItem> legend;
  const bool compile = metrics.vs_compile.problems > 0;
  if (compile) {
    canvas.polyline(fast_p_steps(metrics.vs_compile, x, y),
                    svg::Style{"none", color(kOrange), 2, 1, "6 3"});
    marks(canvas, metrics.vs_compile, x, y, color(kOrange), false);
  }
  canvas.polyline(fast_p_steps(metrics.vs_eager, x, y),
                  svg::Style{"none", color(kBlue), 2.2, 1, ""});
  marks(canvas, metrics.vs_eager, x, y, color(kBlue), true);
  legend.push_back(
      {"vs " + metrics.vs_eager.baseline + " (" + std::to_string(metrics.problems) + " problems)",
       svg::Style{"none", color(kBlue), 2.2, 1, ""}});
  if (compile) {
    legend.push_back({"vs torch.compile (" + std::to_string(metrics.vs_compile.problems) +
                          " with a compile time)",
                      svg::Style{"none", color(kOrange), 2, 1, "6 3"}});
  }
  svg::draw_legend(canvas, frame.right, 8, legend);
  return canvas.str();
}

}  // namespace mblast::report::plots
