// The comparison of `mblast report DIR --against OTHER` in Markdown and JSON.
#include <algorithm>
#include <ostream>

#include "mblast/json_fields.hpp"
#include "report/compare_render.hpp"
#include "report/json_util.hpp"
#include "report/render_text.hpp"

namespace mblast::report {

namespace {

constexpr std::int64_t kCurveRows = 30;

std::string evaluations_text(const std::optional<std::int64_t>& evaluations) {
  return evaluations ? std::to_string(*evaluations) : std::string("-");
}

std::string seconds_text(const std::optional<double>& seconds) {
  return seconds ? short_number(*seconds, 3) : std::string("-");
}

nlohmann::json side_json(const ComparedSide& side) {
  return {{"correct", side.correct},
          {"best_speedup", optional_json(side.best)},
          {"evaluations_to_near_best", optional_json(side.evaluations_to_near_best)},
          {"evaluations", side.evaluations},
          {"seconds", optional_json(side.seconds)}};
}

void write_groups(std::ostream& out, const Comparison& c) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : c.groups) {
    const auto ratio = g.evaluations_ratio();
    rows.push_back({g.name, std::to_string(g.problems), short_number(g.mean_evaluations_self, 3),
                    short_number(g.mean_evaluations_other, 3),
                    ratio ? short_number(*ratio, 3) : std::string("-"),
                    speedup_text(g.geomean_self), speedup_text(g.geomean_other),
                    short_number(g.seconds_self, 4), short_number(g.seconds_other, 4)});
  }
  markdown_table(out,
                 {"group", "problems", "evaluations to 95 %", "against", "ratio", "geomean best",
                  "against", "wall s", "against"},
                 rows, {false, true, true, true, true, true, true, true, true});
}

void write_problems(std::ostream& out, const Comparison& c) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : c.problems) {
    rows.push_back({p.task, evaluations_text(p.self.evaluations_to_near_best),
                    evaluations_text(p.other.evaluations_to_near_best), speedup_text(p.self.best),
                    speedup_text(p.other.best), std::to_string(p.self.evaluations),
                    std::to_string(p.other.evaluations), seconds_text(p.self.seconds),
                    seconds_text(p.other.seconds)});
  }
  markdown_table(out,
                 {"problem", "evaluations to 95 %", "against", "best", "against", "evaluations",
                  "against", "wall s", "against"},
                 rows, {false, true, true, true, true, true, true, true, true});
}

void write_curve(std::ostream& out, const Comparison& c) {
  const auto curves = comparison_curves(c);
  if (curves.self.empty()) return;
  out << "\nGeometric mean of the running best after each evaluation, over the problems correct "
         "in both:\n\n";
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < curves.self.size(); ++i) {
    rows.push_back(
        {std::to_string(i + 1), speedup_text(curves.self[i]), speedup_text(curves.other[i])});
  }
  markdown_table(out, {"evaluations", "this", "against"}, rows, {true, true, true});
}

}  // namespace

ComparisonCurves comparison_curves(const Comparison& c) {
  std::vector<const ComparedSide*> self, other;
  std::int64_t most = 0;
  for (const auto& p : c.problems) {
    if (!p.self.correct || !p.other.correct) continue;
    self.push_back(&p.self);
    other.push_back(&p.other);
    most = std::max({most, p.self.evaluations, p.other.evaluations});
  }
  most = std::min(most, kCurveRows);
  return {geomean_best_per_evaluation(self, most), geomean_best_per_evaluation(other, most)};
}

void write_comparison_markdown(std::ostream& out, const Comparison& c) {
  out << "\n## Against " << c.other_dir.string() << "\n\n"
      << "The same problems in both: evaluations until a run first came within "
      << short_number((1 - kNearBestShare) * 100, 3)
      << " % of its own final best (the reference's evaluation, the first, holds 1.0x), the "
         "final best speedup and the wall; a group's figures are over its problems correct in "
         "both.\n\n";
  if (c.problems.empty()) {
    out << "No problem is in both.\n";
  } else {
    write_groups(out, c);
    out << "\n";
    write_problems(out, c);
    write_curve(out, c);
  }
  if (!c.only_here.empty() || !c.only_there.empty()) {
    out << "\nOnly in this report: " << c.only_here.size() << "; only in " << c.other_dir.string()
        << ": " << c.only_there.size() << ".\n";
  }
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : c.groups) {
    const auto ratio = g.evaluations_ratio();
    groups.push_back({{"group", g.name},
                      {"problems", g.problems},
                      {"mean_evaluations_to_near_best", g.mean_evaluations_self},
                      {"against_mean_evaluations_to_near_best", g.mean_evaluations_other},
                      {"evaluations_ratio", optional_json(ratio)},
                      {"geomean_best", optional_json(g.geomean_self)},
                      {"against_geomean_best", optional_json(g.geomean_other)},
                      {"seconds", g.seconds_self},
                      {"against_seconds", g.seconds_other}});
  }
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : c.problems) {
    problems.push_back({{"task", p.task},
                        {"group", p.group},
                        {"this", side_json(p.self)},
                        {"against", side_json(p.other)}});
  }
  const auto curves = comparison_curves(c);
  return {{"against", c.other_dir.string()},
          {"near_best_share", kNearBestShare},
          {"groups", groups},
          {"problems", problems},
          {"geomean_best_per_evaluation", {{"this", curves.self}, {"against", curves.other}}},
          {"only_here", c.only_here},
          {"only_there", c.only_there}};
}

}  // namespace mblast::report
