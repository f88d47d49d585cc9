#pragma once
// Judging one candidate against its problem: build (nvcc, cached), verify over several seeds with
// the anti-cheat checks, time against the eager baseline. Used by `mblast eval` and by the loop.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace mblast {

class WorkerPool;

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
  int timing_runs = 30;
  bool compile_baseline = false;  // also time torch.compile of the reference
  std::chrono::seconds timeout{600};
  std::filesystem::path cache_dir;  // reference outputs and CUDA builds; empty: ~/.cache/mblast
};

// The result object of DESIGN.md §8: correct, max_abs_err, max_rel_err, ref_ms, cand_ms, speedup,
// flags, error, plus tolerance, timing, build and sandbox details. Throws mblast::Error
// (exit 2) when the problem itself is unusable; a bad candidate is a result, not an exception.
nlohmann::json evaluate(const EvalOptions& options, WorkerPool& workers);

// The cache folder used when EvalOptions::cache_dir is empty.
std::filesystem::path default_cache_dir();

}  // namespace mblast
