// `mblast report DIR --against OTHER`: the same problems run two ways, side by side.
#include <gtest/gtest.h>

#include <cmath>

#include "mblast/report.hpp"

namespace mblast {
namespace {

using report::ProblemRow;

ProblemRow row(const std::string& task, std::optional<double> best,
               std::vector<std::pair<double, double>> trajectory, std::int64_t evaluations,
               double seconds) {
  ProblemRow r;
  r.task = task;
  r.name = task;
  r.ran = true;
  r.correct = best.has_value();
  r.speedup = best;
  r.trajectory = std::move(trajectory);
  r.evaluations = evaluations;
  r.seconds = seconds;
  return r;
}

TEST(ReportCompare, EvaluationsToNearBestIsTheFirstCountWithin5PercentOfTheFinalBest) {
  const std::vector<std::pair<double, double>> trajectory = {{2, 1.0}, {3, 1.5}, {5, 2.0}};
  EXPECT_EQ(report::evaluations_to_near_best(trajectory, 2.0, 6), 5);
  EXPECT_EQ(report::evaluations_to_near_best(trajectory, 1.55, 6), 3);  // 1.5 >= 0.95 x 1.55
  // Within 5 % of the reference's 1.0x: the reference's own evaluation, the first.
  EXPECT_EQ(report::evaluations_to_near_best(trajectory, 1.05, 6), 1);
  // A best the steps never recorded: the run's last evaluation.
  EXPECT_EQ(report::evaluations_to_near_best(trajectory, 3.0, 6), 6);
}

TEST(ReportCompare, ProblemsAreMatchedByTaskAndSummedPerLevelOverThoseCorrectInBoth) {
  report::Report warm, cold;
  warm.dir = "warm";
  cold.dir = "cold";
  warm.rows = {row("level1/1_A", 2.0, {{2, 2.0}}, 4, 10),
               row("level2/7_B", 1.5, {{2, 1.0}, {3, 1.5}}, 4, 20),
               row("level2/9_C", std::nullopt, {}, 2, 5), row("level3/4_D", 1.2, {}, 3, 1)};
  cold.rows = {row("level2/7_B", 1.5, {{2, 1.0}, {3, 1.1}, {6, 1.5}}, 6, 30),
               row("level1/1_A", 2.0, {{2, 1.0}, {4, 2.0}}, 4, 12),
               row("level2/9_C", 1.1, {{2, 1.1}}, 2, 6)};
  const auto c = report::compare_reports(warm, cold);
  ASSERT_EQ(c.problems.size(), 3u);
  EXPECT_EQ(c.problems[0].task, "level1/1_A");  // this report's order
  EXPECT_EQ(*c.problems[0].self.evaluations_to_near_best, 2);
  EXPECT_EQ(*c.problems[0].other.evaluations_to_near_best, 4);
  EXPECT_FALSE(c.problems[2].self.evaluations_to_near_best.has_value());
  EXPECT_EQ(c.only_here, std::vector<std::string>{"level3/4_D"});
  EXPECT_TRUE(c.only_there.empty());

  ASSERT_EQ(c.groups.size(), 3u);
  EXPECT_EQ(c.groups[0].name, "level1");
  EXPECT_EQ(c.groups[1].name, "level2");
  EXPECT_EQ(c.groups[1].problems, 1);  // 9_C failed on this side
  EXPECT_DOUBLE_EQ(c.groups[1].mean_evaluations_self, 3);
  EXPECT_DOUBLE_EQ(c.groups[1].mean_evaluations_other, 6);
  EXPECT_DOUBLE_EQ(c.groups[1].seconds_other, 36);  // the wall counts every matched problem
  const auto& all = c.groups[2];
  EXPECT_EQ(all.name, "all");
  EXPECT_EQ(all.problems, 2);
  EXPECT_DOUBLE_EQ(all.mean_evaluations_self, 2.5);
  EXPECT_DOUBLE_EQ(all.mean_evaluations_other, 5);
  EXPECT_DOUBLE_EQ(*all.evaluations_ratio(), 0.5);
  EXPECT_DOUBLE_EQ(*all.geomean_self, std::sqrt(2.0 * 1.5));
}

TEST(ReportCompare, TheCurveIsTheGeomeanOfTheRunningBestHeldBetweenSteps) {
  report::ComparedSide a, b;
  a.correct = b.correct = true;
  a.trajectory = {{2, 2.0}, {4, 4.0}};
  b.trajectory = {{3, 1.0}};
  const auto curve = report::geomean_best_per_evaluation({&a, &b}, 5);
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_DOUBLE_EQ(curve[0], 1.0);  // the reference
  EXPECT_DOUBLE_EQ(curve[1], std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(curve[2], std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(curve[4], 2.0);
}

}  // namespace
}  // namespace mblast
