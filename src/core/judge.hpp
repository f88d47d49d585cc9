#pragma once
// The loop's judge: `mblast eval` on candidates in the run directory, each judged at most once
// per run (results stored next to the candidate, so a resumed run reuses them).
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/run_dir.hpp"
#include "mblast/agents.hpp"
#include "mblast/eval_options.hpp"
#include "native/native_backend.hpp"
#include "cuda/worker_pool.hpp"

namespace mblast {

// CUDA candidates (and plain PyTorch ones on the CPU) are judged by the Python worker pool;
// OpenCL and RVV candidates by their native backend on the problem's tensor bundles.
class Judge {
 public:
  Judge(EvalOptions options, const std::filesystem::path& python, const RunDir& run,
        std::size_t prestarted);

  // The stored result when the candidate was judged before, else a fresh evaluation (stored).
  // With compile_baseline (CUDA), torch.compile of the reference is timed too.
  nlohmann::json judge(const std::filesystem::path& candidate, bool compile_baseline = false);
  int evaluations_run() const { return evaluations_run_; }
  // No worker is started ahead any more (the run is ending).
  void stop_prestarting();
  // Evaluations still running at this time are stopped (their result has stopped_by_time_limit
  // and is not stored, so that a resumed run judges the candidate again).
  void set_deadline(std::chrono::steady_clock::time_point until) { options_.until = until; }

  bool native() const { return native_ != nullptr; }
  NativeBackend& native_backend() { return *native_; }
  const BundleSet& bundles() const { return bundles_; }
  // The native baseline as a result object: correct, device_name, ref_ms or ref_cost,
  // baselines, tolerance, torch_version.
  nlohmann::json native_baseline();

 private:
  EvalOptions options_;
  const RunDir& run_;
  std::unique_ptr<WorkerPool> workers_;
  std::unique_ptr<NativeBackend> native_;
  BundleSet bundles_;
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
