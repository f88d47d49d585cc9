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

}  // namespace
}  // namespace mblast
