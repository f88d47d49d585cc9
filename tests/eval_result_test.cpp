// What a judged result comes to, and the names it is stored under.
#include <gtest/gtest.h>

#include "mblast/eval_result.hpp"

namespace mblast {
namespace {

TEST(Outcome, EveryOutcomeIsStoredUnderANameThatReadsBack) {
  for (const auto& [outcome, name] : kOutcomeNames) {
    EXPECT_EQ(to_string(outcome), name);
    EXPECT_EQ(outcome_from(name), outcome) << name;
  }
  EXPECT_FALSE(outcome_from("crashed").has_value());
}

TEST(Outcome, AResultComesToItsKindOfFailure) {
  const std::pair<ErrorKind, Outcome> cases[] = {
      {ErrorKind::compile, Outcome::compile_error},
      {ErrorKind::candidate_load, Outcome::compile_error},
      {ErrorKind::candidate_runtime, Outcome::runtime_error},
      {ErrorKind::crash, Outcome::runtime_error},
      {ErrorKind::timeout, Outcome::timeout},
      {ErrorKind::cheat, Outcome::cheat},
      {ErrorKind::skipped, Outcome::skipped},
      {ErrorKind::mismatch, Outcome::incorrect},
      {ErrorKind::nan_inf, Outcome::incorrect},
  };
  for (const auto& [kind, outcome] : cases) {
    EXPECT_EQ(EvalResult::failure(kind, "x").outcome(), outcome) << to_string(kind);
  }
  EvalResult ok;
  ok.correct = true;
  EXPECT_EQ(ok.outcome(), Outcome::correct);
}

TEST(Tolerance, ReadsWhatEveryJudgeWritesAndWritesItBack) {
  // The CUDA worker's four fields; the native judge adds what was asked.
  const auto cuda = EvalResult::from_json({{"correct", true},
                                           {"tolerance",
                                            {{"atol", 2e-3},
                                             {"rtol", 2e-3},
                                             {"policy", "eager-widened"},
                                             {"widened_by_eager", true}}}});
  ASSERT_TRUE(cuda.tolerance.has_value());
  EXPECT_DOUBLE_EQ(cuda.tolerance->atol, 2e-3);
  EXPECT_EQ(cuda.tolerance->policy, "eager-widened");
  EXPECT_TRUE(cuda.tolerance->widened_by_eager);
  EXPECT_FALSE(cuda.tolerance->requested_atol.has_value());
  EXPECT_FALSE(cuda.to_json()["tolerance"].contains("requested_atol"));
  EXPECT_EQ(EvalResult::from_json(cuda.to_json()).to_json(), cuda.to_json());

  const nlohmann::json native = {{"atol", 1e-4},           {"rtol", 1e-4},
                                 {"policy", "strict"},     {"widened_by_eager", false},
                                 {"requested_atol", 1e-4}, {"requested_rtol", 1e-4}};
  const auto read = Tolerance::from_json(native);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->to_json(), native);
  // No tolerance, or one without its numbers, is no tolerance (a failure before any check).
  EXPECT_FALSE(EvalResult::from_json({{"correct", false}}).tolerance.has_value());
  EXPECT_FALSE(Tolerance::from_json({{"policy", "strict"}}).has_value());
  EXPECT_FALSE(EvalResult::from_json({{"correct", false}}).to_json().contains("tolerance"));
}

TEST(Baselines, ANativeJudgesRowsReadTypedAndWriteBackAsTheyCame) {
  const nlohmann::json rows = nlohmann::json::parse(R"([
    {"name": "torch_cpu", "value": 2.0, "unit": "ms", "detail": "2 threads", "speedup": 4.0},
    {"name": "plain_c", "value": 900, "unit": "cost", "detail": "",
     "cost_check": {"within": true}},
    {"name": "broken", "value": null, "unit": "ms", "detail": "did not run"}])");
  const auto r = EvalResult::from_json({{"correct", true}, {"baselines", rows}});
  ASSERT_TRUE(r.baselines.has_value());
  ASSERT_EQ(r.baselines->size(), 2u);  // an entry without a figure is not a baseline
  const BaselineFigure& torch = r.baselines->front();
  EXPECT_EQ(torch.name, "torch_cpu");
  EXPECT_DOUBLE_EQ(torch.value, 2.0);
  EXPECT_EQ(torch.speedup, 4.0);
  EXPECT_FALSE(r.baselines->back().speedup.has_value());
  EXPECT_EQ(r.baselines->back().extra["cost_check"]["within"], true);
  const auto written = r.to_json()["baselines"];
  EXPECT_EQ(written[0], rows[0]);
  EXPECT_EQ(written[1], rows[1]);
  // The figure alone leaves the candidate's speedup and the rest out.
  EXPECT_EQ(torch.figure().to_json(),
            (nlohmann::json{
                {"name", "torch_cpu"}, {"value", 2.0}, {"unit", "ms"}, {"detail", "2 threads"}}));
  // A CUDA result has no baselines, and writes none.
  EXPECT_FALSE(EvalResult::from_json({{"correct", true}}).baselines.has_value());
  EXPECT_FALSE(EvalResult::from_json({{"correct", true}}).to_json().contains("baselines"));
}

}  // namespace
}  // namespace mblast
