// The judge's options: one JSON form for config.json and the eval server, and runs recorded
// under the names earlier versions used.
#include <gtest/gtest.h>

#include "mblast/eval_options.hpp"
#include "mblast/optimize.hpp"

namespace mblast {
namespace {

JudgeOptions changed_everywhere() {
  JudgeOptions j;
  j.backend = "rvv";
  j.device = "none";
  j.seeds = 7;
  j.seed = 42;
  j.atol = 1e-3;
  j.rtol = 2e-3;
  j.tolerance_policy = "strict";
  j.allow_tf32 = true;
  j.timing_runs = 33;
  j.timing_autograd = false;
  j.timeout = std::chrono::seconds(77);
  j.compile_timeout = std::chrono::seconds(12);
  j.cache_dir = "/tmp/cache";
  j.target = {{"vlen", "512"}};
  return j;
}

TEST(JudgeOptions, EveryFieldSurvivesItsJsonForm) {
  const JudgeOptions before = changed_everywhere();
  JudgeOptions after;
  read_judge_options(judge_options_to_json(before), after);
  EXPECT_EQ(judge_options_to_json(after), judge_options_to_json(before));
  EXPECT_EQ(after.seeds, 7);
  EXPECT_EQ(after.timeout.count(), 77);
  EXPECT_EQ(after.target.at("vlen"), "512");
}

TEST(JudgeOptions, ARunsOptionsCarryTheJudgesUnderItsOwnNames) {
  OptimizeOptions o;
  o.judge = changed_everywhere();
  o.steps = 3;
  const nlohmann::json j = options_to_json(o);
  EXPECT_EQ(j["seeds"], 7);
  EXPECT_EQ(j["tolerance_policy"], "strict");
  const OptimizeOptions back = options_from_json(j);
  EXPECT_EQ(judge_options_to_json(back.judge), judge_options_to_json(o.judge));
  EXPECT_EQ(back.steps, 3);
}

TEST(JudgeOptions, ARunRecordedUnderTheOldNamesResumesWithItsOptions) {
  const nlohmann::json recorded = {{"problem", "p.py"},    {"verify_seeds", 9},
                                   {"eval_timeout_s", 50}, {"strict_tolerance", true},
                                   {"rvv_vlen", 128},      {"backend", "rvv"}};
  const OptimizeOptions o = options_from_json(recorded);
  EXPECT_EQ(o.judge.seeds, 9);
  EXPECT_EQ(o.judge.timeout.count(), 50);
  EXPECT_EQ(o.judge.tolerance_policy, "strict");
  EXPECT_EQ(o.judge.target.at("vlen"), "128");
  EXPECT_EQ(o.judge.backend, "rvv");
}

TEST(JudgeOptions, AnEvaluationIsJudgedWithTheSameDefaults) {
  const EvalOptions e;
  const OptimizeOptions o;
  EXPECT_EQ(judge_options_to_json(e), judge_options_to_json(o.judge));
}

}  // namespace
}  // namespace mblast
