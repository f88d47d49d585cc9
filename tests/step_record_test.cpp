// StepRecord: the steps.jsonl line the loop writes, resume reads and the report charts.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mblast/step_record.hpp"

namespace mblast {
namespace {

StepRecord full_record() {
  StepRecord r;
  r.iteration = 2;
  r.step = 1;
  r.global_step = 5;
  r.slot = "model";
  r.slot_share = 1.0;
  r.state = "launch-bound/many-small-kernels";
  r.state_evidence = "kernel_count = 110 (>= 8)";
  r.ncu_state = "launch-bound";
  r.ncu_evidence = "ncu_busy_ms = 0.2 of total_ms = 1";
  r.technique = "cuda/builtin-cuda-graph";
  r.implementer = "builtin";
  r.decided_by = "ucb";
  r.arm = ArmEvidence{"conv2d>relu|float32:2^20B", 2, 0.5, 0.3, 0.2};
  r.claims_shown = {"c1", "c2"};
  r.region_reward = 0.4;
  r.reused_attempt = "a9";
  r.reuse_held = true;
  r.base = "reference-1.py";
  r.base_depth = 0;
  r.base_then = {"cuda/builtin-torch-compile"};
  r.candidate = "s005-cuda_graph-2.py";
  r.candidates = {{"s005-cuda_graph-2.py", Outcome::correct}};
  r.outcome = Outcome::correct;
  r.speedup = 3.48;
  r.reward = 1.25;
  r.improved = true;
  r.new_best_candidate = true;
  r.best_speedup = 3.48;
  r.attempt_id = "e599";
  r.claims = 1;
  r.critic = "rule-based";
  r.tokens_total = 120;
  r.cost_total_usd = 0.01;
  r.evaluations_total = 6;
  r.seconds = 2.96;
  r.run_seconds = 40.1;
  return r;
}

TEST(StepRecord, TheStepsLineReadsBackAsWritten) {
  const StepRecord written = full_record();
  const nlohmann::json line = written.to_json();
  EXPECT_EQ(line["outcome"], "correct");
  EXPECT_EQ(line["candidates"][0]["outcome"], "correct");
  EXPECT_TRUE(line["error"].is_null());
  const StepRecord read = StepRecord::from_json(nlohmann::json::parse(line.dump()));
  EXPECT_EQ(read.to_json(), line);
  EXPECT_EQ(read.base_depth, std::optional<std::size_t>(0));
  EXPECT_EQ(read.base_then, std::vector<std::string>{"cuda/builtin-torch-compile"});
  EXPECT_EQ(read.outcome, Outcome::correct);
  EXPECT_EQ(line["decision"]["statistics"], "conv2d>relu|float32:2^20B");
  EXPECT_EQ(line["decision"]["n_local"], 2);
  EXPECT_EQ(read.claims_shown, (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(read.reuse_held, std::optional<bool>(true));
  EXPECT_EQ(read.ncu_state, std::optional<std::string>("launch-bound"));
  EXPECT_EQ(line["ncu_evidence"], "ncu_busy_ms = 0.2 of total_ms = 1");
}

TEST(StepRecord, TheStepStartCarriesOnlyTheChoice) {
  const nlohmann::json start = full_record().step_start_json();
  EXPECT_EQ(start["technique"], "cuda/builtin-cuda-graph");
  EXPECT_FALSE(start.contains("outcome"));
  EXPECT_FALSE(start.contains("speedup"));
}

TEST(StepRecord, OlderOrDamagedLinesKeepTheDefaults) {
  // A step recorded before bases were, with a field of the wrong type and an unknown outcome.
  const auto read = StepRecord::from_json(nlohmann::json::parse(
      R"({"global_step": 3, "technique": "cuda/builtin-torch-compile", "speedup": "fast",
          "outcome": "exploded", "improved": 1, "cost_total_usd": null})"));
  EXPECT_EQ(read.global_step, 3);
  EXPECT_TRUE(read.base.empty());
  EXPECT_FALSE(read.base_depth.has_value());
  EXPECT_TRUE(read.base_then.empty());
  EXPECT_FALSE(read.speedup.has_value());
  EXPECT_EQ(read.outcome, Outcome::skipped);
  EXPECT_FALSE(read.improved);
  EXPECT_FALSE(read.cost_total_usd.has_value());
  EXPECT_EQ(StepRecord::from_json(nlohmann::json::array()).global_step, 0);
}

}  // namespace
}  // namespace mblast
