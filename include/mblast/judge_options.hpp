#pragma once
// How the candidates of one problem are judged, whoever asks: `mblast eval` (EvalOptions adds the
// candidate and what to measure) and `mblast optimize` (OptimizeOptions::judge). One default per
// field here, and one JSON form, used by the run directory's config.json and the eval server.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace mblast {

struct JudgeOptions {
  std::string backend = "cuda";
  std::string device = "cuda";  // "cuda", "cuda:N" or "cpu" (plain PyTorch candidates)
  int seeds = 5;                // verification trials, each with fresh inputs
  std::uint64_t seed = 1;       // trial seeds are seed, seed+1, ... (and the loop's own seed)
  double atol = 1e-4;
  double rtol = 1e-4;
  std::string tolerance_policy = "eager-widened";  // or "strict"
  bool allow_tf32 = false;
  int timing_runs = 100;  // at most; CUDA times fewer where they would exceed about 0.4 s
  // CUDA: timed calls record autograd as a plain call and KernelBench's harness do; false times
  // them under torch.no_grad(). Correctness trials run in the same mode.
  bool timing_autograd = true;
  // A candidate's limit (CallLimits): 0 derives it from the reference (a minute plus 1000 x
  // eager's time, after compile_timeout for its import and first call); else this caps each
  // worker request in all.
  std::chrono::seconds timeout{0};
  // The candidate's import and first call (JIT builds, torch.compile); 0: the device's default,
  // compile_allowance() in eval_options.hpp.
  std::chrono::seconds compile_timeout{0};
  std::filesystem::path cache_dir;  // reference outputs and CUDA builds; empty: ~/.cache/mblast
  // Where a candidate is profiled, what measures it: "torch" (the PyTorch profiler) or "ncu"
  // (also Nsight Compute's counters, in a child process under ncu; CUDA only, slower).
  std::string profiler = "torch";
  // With "ncu": the kernels profiled at most per forward (ncu --launch-count); a forward with more
  // has its first ones profiled, and its launch gaps are not judged from them.
  int ncu_kernels = 100;
  // The backend's own options by key (BackendTraits::options: "vlen", "remote", ...); a key
  // not given takes the backend's default.
  std::map<std::string, std::string> target;
};

// Keys: backend, device, seeds, seed, atol, rtol, tolerance_policy, allow_tf32, timing_runs,
// timing_autograd, timeout_s, compile_timeout_s, cache_dir, profiler, ncu_kernels,
// target.
nlohmann::json judge_options_to_json(const JudgeOptions& options);
// The fields `json` holds replace those of `options`; the others keep their values. Throws
// nlohmann::json::exception for a field of the wrong type.
void read_judge_options(const nlohmann::json& json, JudgeOptions& options);

}  // namespace mblast
