#pragma once
// How to judge candidates of one problem: the backend, the device, the trials, the precision
// policy, timing and limits. Shared by `mblast eval`, the loop and every backend.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace mblast {

struct EvalOptions {
  std::filesystem::path problem;
  std::filesystem::path candidate;
  std::string backend = "cuda";
  std::string device = "cuda";  // "cuda", "cuda:N" or "cpu"
  int seeds = 5;                // verification trials, each with fresh inputs
  std::uint64_t seed = 1;       // trial seeds are seed, seed+1, ...
  double atol = 1e-4;
  double rtol = 1e-4;
  std::string tolerance_policy = "eager-widened";  // or "strict"
  bool allow_tf32 = false;
  bool timing = true;
  int timing_runs = 100;  // at most; CUDA times fewer where they would exceed about 0.4 s
  // CUDA: timed calls record autograd as a plain call and KernelBench's harness do; false times
  // them under torch.no_grad(). Correctness trials never record it.
  bool timing_autograd = true;
  bool compile_baseline = false;  // also time torch.compile of the reference
  bool profile = false;  // profile signatures of candidate and reference (PyTorch profiler)
  // A candidate's limit (CallLimits): 0 derives it from the reference (a minute plus 1000 x
  // eager's time, after compile_timeout for its import and first call); else this caps each
  // worker request in all.
  std::chrono::seconds timeout{0};
  // The candidate's import and first call (JIT builds, torch.compile); 0: the device's default,
  // compile_allowance() below.
  std::chrono::seconds compile_timeout{0};
  std::optional<std::chrono::steady_clock::time_point> until;  // a run's --time-limit
  std::filesystem::path cache_dir;  // reference outputs and CUDA builds; empty: ~/.cache/mblast
  // The backend's own options by key (BackendTraits::options: "vlen", "remote", ...); a key
  // not given takes the backend's default.
  std::map<std::string, std::string> target;
  bool use_server = false;  // CUDA `mblast eval`: judge through the eval server where it helps

  std::string target_value(const std::string& key, const std::string& fallback = {}) const {
    const auto it = target.find(key);
    return it == target.end() || it->second.empty() ? fallback : it->second;
  }
  // The limit of one native run: --timeout, else 600 s.
  std::chrono::seconds native_timeout() const {
    return timeout.count() > 0 ? timeout : std::chrono::seconds(600);
  }
};
// What a candidate's import and first call may take: compile_timeout when given, else 90 s on the
// CPU (a hang there is stopped within two minutes) and 300 s on a GPU (max-autotune compiles).
inline std::chrono::seconds compile_allowance(const EvalOptions& options) {
  if (options.compile_timeout.count() > 0) return options.compile_timeout;
  return std::chrono::seconds(options.device == "cpu" ? 90 : 300);
}

// The cache folder used when EvalOptions::cache_dir is empty.
std::filesystem::path default_cache_dir();

}  // namespace mblast
