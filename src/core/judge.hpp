#pragma once
// The loop's judge: a Backend's verdicts on candidates in the run directory, each judged at most
// once per run (results stored next to the candidate, so that a resumed run reuses them).
#include <filesystem>

#include "core/run_dir.hpp"
#include "mblast/agents.hpp"
#include "mblast/backend.hpp"
#include "mblast/eval_result.hpp"

namespace mblast {

class Judge {
 public:
  Judge(Backend& backend, const RunDir& run) : backend_(backend), run_(run) {}

  // The stored result when the candidate was judged before, else a fresh evaluation (stored,
  // unless the run's time limit stopped it). With compile_baseline, torch.compile of the
  // reference is timed too (CUDA).
  EvalResult judge(const std::filesystem::path& candidate, bool compile_baseline = false);
  int evaluations_run() const { return evaluations_run_; }

 private:
  Backend& backend_;
  const RunDir& run_;
  int evaluations_run_ = 0;
};

// What the fix agent and the critic are told about a failed result.
FailureReport failure_report(const EvalResult& result);

}  // namespace mblast
