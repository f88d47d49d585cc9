#pragma once
// The loop's judge: `mblast eval` on candidates in the run directory, each judged at most once
// per run (results stored next to the candidate, so a resumed run reuses them).
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/run_dir.hpp"
#include "mblast/agents.hpp"
#include "mblast/eval.hpp"
#include "mblast/worker.hpp"

namespace mblast {

class Judge {
 public:
  Judge(EvalOptions options, const std::filesystem::path& python, const RunDir& run,
        std::size_t prestarted);

  // The stored result when the candidate was judged before, else a fresh evaluation (stored).
  nlohmann::json judge(const std::filesystem::path& candidate);
  int evaluations_run() const { return evaluations_run_; }
  // No worker is started ahead any more (the run is ending).
  void stop_prestarting() { workers_.set_prestarted(0); }

 private:
  EvalOptions options_;
  const RunDir& run_;
  WorkerPool workers_;
  int evaluations_run_ = 0;
};

// The KB's attempt outcome for a judge's result: correct | incorrect | compile_error |
// runtime_error | timeout | cheat.
std::string attempt_outcome(const nlohmann::json& result);

// What the fix agent and the critic are told about a failed result.
FailureReport failure_report(const nlohmann::json& result);

// The candidate source of a built-in transform: of the problem's Model (`base` is the problem)
// or over the ModelNew of an earlier candidate (`over`). Throws job_error when it cannot be made.
std::string builtin_candidate(const std::filesystem::path& python, const std::string& transform,
                              const std::filesystem::path& base, bool over);

}  // namespace mblast
