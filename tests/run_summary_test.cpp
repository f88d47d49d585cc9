#include "mblast/run_summary.hpp"

#include <gtest/gtest.h>

namespace mblast {
namespace {

TEST(RunSummaryTest, TheJsonFormHoldsEveryFieldOfTheOptimizeResult) {
  RunSummary r;
  r.status = "finished";
  r.run_dir = "/runs/a";
  r.evaluations = 3;
  r.best_speedup = 2.5;
  r.best_technique = "cuda/builtin-cuda-graph";
  r.best_file = std::filesystem::path("/runs/a/best.py");
  r.baseline_ms = 1.0;
  r.cost_usd = 0.25;
  r.baselines = BaselineFigure::list_from(nlohmann::json::parse(
      R"([{"name": "torch_cpu", "value": 4.0, "unit": "ms", "detail": "2 threads"},
          {"name": "broken", "value": null}])"));
  r.baseline_extra["shrink"] = {{"factor", 4}};
  const auto j = r.to_json();
  for (const char* field : {"best_speedup", "correct", "evaluations", "run_dir", "tokens",
                            "cost_usd", "status", "stop_reason", "steps", "best_file",
                            "kernelbench_file", "compile_ms", "speedup_vs_compile", "tolerance"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  EXPECT_EQ(j["correct"], true);
  EXPECT_EQ(j["best_is_reference"], false);
  EXPECT_EQ(j["best_file"], "/runs/a/best.py");
  EXPECT_TRUE(j["kernelbench_file"].is_null());
  EXPECT_EQ(j["evaluations"], 3);
  ASSERT_EQ(j["baselines"].size(), 1u);  // an entry without a figure is not a baseline
  EXPECT_EQ(j["baselines"][0]["detail"], "2 threads");
  EXPECT_EQ(j["shrink"]["factor"], 4);
}

TEST(RunSummaryTest, NothingCorrectHasNoBestTechnique) {
  RunSummary r;
  r.best_technique = "reference";
  const auto j = r.to_json();
  EXPECT_EQ(j["correct"], false);
  EXPECT_TRUE(j["best_speedup"].is_null());
  EXPECT_TRUE(j["best_technique"].is_null());
  EXPECT_EQ(j["best_is_reference"], false);
  EXPECT_TRUE(j["cost_usd"].is_null());
}

}  // namespace
}  // namespace mblast
