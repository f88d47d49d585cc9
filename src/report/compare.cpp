// `mblast report DIR --against OTHER`: the same problems run two ways, side by side.
#include <algorithm>
#include <cmath>
#include <map>

#include "mblast/report.hpp"

namespace mblast::report {

namespace {

std::string group_of(const std::string& task) {
  const auto slash = task.find('/');
  return slash == std::string::npos ? std::string("problems") : task.substr(0, slash);
}

ComparedSide side_of(const ProblemRow& row) {
  ComparedSide side;
  side.correct = row.correct && row.speedup.has_value();
  if (side.correct) side.best = row.speedup;
  side.evaluations = row.evaluations;
  side.seconds = row.seconds;
  side.trajectory = row.trajectory;
  if (side.correct) {
    side.evaluations_to_near_best =
        evaluations_to_near_best(row.trajectory, *row.speedup, row.evaluations);
  }
  return side;
}

const ProblemRow* find_task(const Report& report, const std::string& task) {
  for (const auto& row : report.rows) {
    if (row.task == task) return &row;
  }
  return nullptr;
}

ComparedGroup summarize(const std::string& name, const std::vector<const ComparedProblem*>& in) {
  ComparedGroup group;
  group.name = name;
  std::vector<double> best_self, best_other;
  double evaluations_self = 0, evaluations_other = 0;
  for (const auto* p : in) {
    group.seconds_self += p->self.seconds.value_or(0);
    group.seconds_other += p->other.seconds.value_or(0);
    if (!p->self.evaluations_to_near_best || !p->other.evaluations_to_near_best) continue;
    ++group.problems;
    evaluations_self += static_cast<double>(*p->self.evaluations_to_near_best);
    evaluations_other += static_cast<double>(*p->other.evaluations_to_near_best);
    best_self.push_back(*p->self.best);
    best_other.push_back(*p->other.best);
  }
  if (group.problems > 0) {
    group.mean_evaluations_self = evaluations_self / static_cast<double>(group.problems);
    group.mean_evaluations_other = evaluations_other / static_cast<double>(group.problems);
  }
  group.geomean_self = geometric_mean(best_self);
  group.geomean_other = geometric_mean(best_other);
  return group;
}

// The running best of one side after `evaluations` evaluations: the reference's 1.0x before the
// first step.
double best_after(const ComparedSide& side, double evaluations) {
  double best = 1.0;
  for (const auto& [at, value] : side.trajectory) {
    if (at > evaluations) break;
    best = value;
  }
  return best;
}

}  // namespace

std::int64_t evaluations_to_near_best(const std::vector<std::pair<double, double>>& trajectory,
                                      double best, std::int64_t evaluations) {
  const double near = kNearBestShare * best;
  if (near <= 1.0) return 1;
  for (const auto& [at, value] : trajectory) {
    if (value >= near) return static_cast<std::int64_t>(std::llround(at));
  }
  return std::max<std::int64_t>(evaluations, 1);
}

Comparison compare_reports(const Report& self, const Report& other) {
  Comparison comparison;
  comparison.other_dir = other.dir;
  for (const auto& row : self.rows) {
    const ProblemRow* there = find_task(other, row.task);
    if (!there) {
      comparison.only_here.push_back(row.task);
      continue;
    }
    comparison.problems.push_back({row.task, group_of(row.task), side_of(row), side_of(*there)});
  }
  for (const auto& row : other.rows) {
    if (!find_task(self, row.task)) comparison.only_there.push_back(row.task);
  }
  std::map<std::string, std::vector<const ComparedProblem*>> by_group;
  std::vector<const ComparedProblem*> all;
  for (const auto& p : comparison.problems) {
    by_group[p.group].push_back(&p);
    all.push_back(&p);
  }
  for (const auto& [name, members] : by_group) {
    comparison.groups.push_back(summarize(name, members));
  }
  if (!all.empty()) comparison.groups.push_back(summarize("all", all));
  return comparison;
}

std::vector<double> geomean_best_per_evaluation(const std::vector<const ComparedSide*>& sides,
                                                std::int64_t most) {
  std::vector<double> curve;
  for (std::int64_t n = 1; n <= most; ++n) {
    std::vector<double> values;
    for (const auto* side : sides) {
      if (side->correct) values.push_back(best_after(*side, static_cast<double>(n)));
    }
    curve.push_back(geometric_mean(values).value_or(1.0));
  }
  return curve;
}

}  // namespace mblast::report
