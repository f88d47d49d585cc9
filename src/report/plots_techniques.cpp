// Plot (d): a heatmap of technique win rates, techniques down, states across.
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>

#include "report/json_util.hpp"
#include "report/plots.hpp"

namespace mblast::report::plots {

namespace {

constexpr std::size_t kMostTechniques = 30;
constexpr std::size_t kMostStates = 10;
constexpr double kRow = 22;
constexpr double kLabelFont = 11;
constexpr double kSlant = 40;  // degrees the state labels rise
constexpr const char* kNotTried = "#e4e4e4";

// White through light green to dark green.
std::string win_color(double rate) {
  const double stops[3][3] = {{247, 252, 245}, {116, 196, 118}, {0, 68, 27}};
  const double t = std::clamp(rate, 0.0, 1.0) * 2;
  const int i = t < 1 ? 0 : 1;
  const double f = t - i;
  char buffer[8];
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(std::lround(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f));
  }
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return buffer;
}

std::string shortened(const std::string& text, std::size_t most) {
  return text.size() <= most ? text : text.substr(0, most - 1) + "\u2026";
}

// Names ordered by their total tries, most first, at most `most` of them.
std::vector<std::string> by_tries(const std::map<std::string, std::int64_t>& totals,
                                  std::size_t most) {
  std::vector<std::pair<std::string, std::int64_t>> sorted(totals.begin(), totals.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> names;
  for (std::size_t i = 0; i < sorted.size() && i < most; ++i) names.push_back(sorted[i].first);
  return names;
}

std::string scope_text(const TechniqueStats& stats) {
  const std::string kbs = fmt::format("{}", fmt::join(stats.kbs, ", "));
  if (stats.scope == "kb") return "every attempt in " + kbs;
  return kbs.empty() ? "attempts of these runs" : "attempts of these runs in " + kbs;
}

void color_key(svg::Canvas& canvas, double left, double top) {
  svg::Font font;
  font.size = kLabelFont;
  font.fill = "#444";
  font.baseline = "middle";
  const std::string label = "cell: correct and improved (reward > 0) / tries";
  canvas.text(left, top + 8, label, font);
  double x = left + svg::text_width(label, kLabelFont) + 12;
  for (double rate : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    canvas.rect(x, top, 16, 16, svg::Style{win_color(rate), "#bbb", 0.5, 1, ""});
    canvas.text(x + 20, top + 8, short_number(rate * 100, 3) + "%", font);
    x += 58;
  }
  canvas.rect(x, top, 16, 16, svg::Style{kNotTried, "#bbb", 0.5, 1, ""});
  canvas.text(x + 20, top + 8, "not tried", font);
}

}  // namespace

std::string technique_heatmap(const TechniqueStats& stats) {
  std::map<std::string, std::int64_t> technique_tries, state_tries;
  std::map<std::pair<std::string, std::string>, const TechniqueStat*> cells;
  for (const auto& row : stats.rows) {
    technique_tries[row.technique] += row.tries;
    state_tries[row.state] += row.tries;
    cells[{row.technique, row.state}] = &row;
  }
  const auto techniques = by_tries(technique_tries, kMostTechniques);
  const auto states = by_tries(state_tries, kMostStates);
  std::string subtitle = scope_text(stats);
  if (technique_tries.size() > techniques.size() || state_tries.size() > states.size()) {
    subtitle = "the " + std::to_string(techniques.size()) + " techniques and " +
               std::to_string(states.size()) + " states tried most; " + subtitle;
  }
  if (stats.rows.empty()) {
    svg::Canvas canvas(kWidth, 200, kTechniquesTitle);
    svg::draw_title(canvas, kTechniquesTitle, scope_text(stats));
    std::string message = "no attempts found";
    if (!stats.notes.empty()) message += ": " + shortened(stats.notes.front(), 90);
    svg::draw_empty(canvas, svg::Frame{16, 60, kWidth - 16, 184}, message);
    return canvas.str();
  }

  double label_width = 0, state_width = 0;
  for (const auto& t : techniques) {
    label_width = std::max(label_width, svg::text_width(shortened(t, 40), kLabelFont));
  }
  for (const auto& s : states) {
    state_width = std::max(state_width, svg::text_width(shortened(s, 34), kLabelFont));
  }
  const double rise = std::sin(kSlant * std::numbers::pi / 180),
               run = std::cos(kSlant * std::numbers::pi / 180);
  const double left = 16 + label_width + 10;
  // Columns as wide as fits, with room for the last state's slanted label on the right.
  const double states_n = static_cast<double>(states.size());
  const double column = std::max(
      24.0, std::min({90.0, (kWidth - 16 - left) / states_n,
                      (kWidth - 8 - left - state_width * run) / std::max(states_n - 0.5, 0.5)}));
  const double top = 66 + state_width * rise + 10;
  const double bottom = top + kRow * static_cast<double>(techniques.size());
  svg::Canvas canvas(kWidth, bottom + 50, kTechniquesTitle);
  svg::draw_title(canvas, kTechniquesTitle, subtitle);

  svg::Font font;
  font.size = kLabelFont;
  font.rotate = -kSlant;
  for (std::size_t c = 0; c < states.size(); ++c) {
    const double cx = left + column * (static_cast<double>(c) + 0.5);
    canvas.text(cx - 2, top - 6, shortened(states[c], 34), font);
  }
  font.rotate = 0;
  font.anchor = "end";
  font.baseline = "middle";
  svg::Font cell_font;
  cell_font.size = 10.5;
  cell_font.anchor = "middle";
  cell_font.baseline = "middle";
  for (std::size_t r = 0; r < techniques.size(); ++r) {
    const double y = top + kRow * static_cast<double>(r);
    canvas.text(left - 8, y + kRow / 2, shortened(techniques[r], 40), font);
    for (std::size_t c = 0; c < states.size(); ++c) {
      const double x = left + column * static_cast<double>(c);
      auto it = cells.find({techniques[r], states[c]});
      if (it == cells.end()) {
        canvas.rect(x, y, column, kRow, svg::Style{kNotTried, "#fff", 1.5, 1, ""});
        continue;
      }
      const TechniqueStat& s = *it->second;
      canvas.rect(x, y, column, kRow, svg::Style{win_color(s.win_rate()), "#fff", 1.5, 1, ""},
                  s.technique + " in " + s.state + ": " + std::to_string(s.tries) + " tries, " +
                      std::to_string(s.correct) + " correct, " + std::to_string(s.wins) +
                      " improved (" + percent_text(s.win_rate()) + ")");
      cell_font.fill = s.win_rate() > 0.55 ? "#fff" : "#222";
      canvas.text(x + column / 2, y + kRow / 2,
                  std::to_string(s.wins) + "/" + std::to_string(s.tries), cell_font);
    }
  }
  color_key(canvas, 16, bottom + 16);
  return canvas.str();
}

}  // namespace mblast::report::plots
