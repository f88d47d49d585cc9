#pragma once
// What one evaluation judges and measures, on top of how (JudgeOptions). Shared by `mblast eval`,
// the loop and every backend.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mblast/judge_options.hpp"

namespace mblast {

// One `mblast eval` (or one candidate of the loop): the judge's options and the candidate.
struct EvalOptions : JudgeOptions {
  std::filesystem::path problem;
  // More problem files of the same Model the candidate is judged on after `problem`, in the same
  // worker, in order, stopping at the first it fails (a SOL-ExecBench problem's workloads).
  std::vector<std::filesystem::path> workloads;
  std::filesystem::path candidate;
  bool timing = true;
  bool compile_baseline = false;  // also time torch.compile of the reference
  bool profile = false;  // profile signatures of candidate and reference (PyTorch profiler)
  bool profile_reference = true;  // with profile: the reference's signature too
  std::optional<std::chrono::steady_clock::time_point> until;  // a run's --time-limit
  bool use_server = false;  // CUDA `mblast eval`: judge through the eval server where it helps
  // The candidate is mblast's own code over the problem's (a built-in, never an LLM's): what its
  // torch.compile caches join the problem's compile cache, which every later worker starts from.
  bool keep_compile_cache = false;

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
