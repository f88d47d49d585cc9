#pragma once
// Judging one candidate against its problem: build (nvcc, cached), verify over several seeds with
// the anti-cheat checks, time against the eager baseline. Used by `mblast eval` and by the loop.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/bundle.hpp"
#include "mblast/native.hpp"
#include "mblast/worker.hpp"

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
  int timing_runs = 100;          // at most; CUDA times fewer where they would exceed about 0.4 s
  bool compile_baseline = false;  // also time torch.compile of the reference
  bool profile = false;  // profile signatures of candidate and reference (PyTorch profiler)
  // A candidate's limit (CallLimits): 0 derives it from the reference (a minute plus 1000 x
  // eager's time, after compile_timeout for its import and first call); else this caps each
  // worker request in all.
  std::chrono::seconds timeout{0};
  std::chrono::seconds compile_timeout{300};
  std::optional<std::chrono::steady_clock::time_point> until;  // a run's --time-limit
  std::filesystem::path cache_dir;  // reference outputs and CUDA builds; empty: ~/.cache/mblast
  int rvv_vlen = 256;               // RVV: the vector length QEMU emulates, in bits
  std::string remote;               // OpenCL: run on this target (mblast/remote.hpp); empty: here
  std::string remote_mblast = "mblast";  // the mblast binary on a ssh or adb target
  std::string remote_prefix;  // RVV on a remote target: run the executable through this command
};

// The result object of DESIGN.md §8: correct, max_abs_err, max_rel_err, ref_ms, cand_ms, speedup,
// flags, error, plus tolerance, timing, build and sandbox details, the worker's phase_seconds,
// and build_seconds (its CUDA builds), eval_seconds (from taking a worker to its answer) and
// worker_wait_seconds (the part of eval_seconds spent waiting for the worker's ready line).
// Throws mblast::Error (exit 2) when the problem itself is unusable; a bad candidate is a
// result, not an exception.
nlohmann::json evaluate(const EvalOptions& options, WorkerPool& workers);

// Judges several candidates of options.problem (options.candidate is ignored) with one pool,
// results in the order given. The CUDA sources of all candidates are compiled first, in
// parallel, while the pool's first worker starts; the device ceilings are looked up once; with
// one worker pre-started, each candidate after the first finds a ready worker, so Python and
// CUDA start-up stay out of its latency. Throws as evaluate() does.
// keep_prestarted: a worker stays started ahead after the last candidate too (the eval server).
std::vector<nlohmann::json> evaluate_all(const EvalOptions& options,
                                         const std::vector<std::filesystem::path>& candidates,
                                         WorkerPool& workers, bool keep_prestarted = false);

// The precision policy of DESIGN.md §3 for a native problem: options.atol / rtol, widened to
// 1.5x PyTorch's own fp32 error (bundles' meta "eager") unless the policy is "strict".
// {"atol", "rtol", "policy", "widened_by_eager", "requested_atol", "requested_rtol"}.
nlohmann::json native_tolerance(const EvalOptions& options, const nlohmann::json& bundle_meta);

// Judges a native candidate (OpenCL or RVV) on the problem's tensor bundles: `backend` builds and
// runs it; each seed's outputs are compared with the float64 reference under the precision
// policy (widened to 1.5x PyTorch's own fp32 error unless strict), and its time (OpenCL) or
// deterministic cost (RVV) is set against the backend's baselines: `speedup` is over the first,
// `speedup_baseline` names it, `baselines` lists them all. Same result fields as evaluate().
nlohmann::json evaluate_native(const EvalOptions& options, const std::filesystem::path& candidate,
                               NativeBackend& backend, const BundleSet& bundles);

// {"count", "correct", "p50_s", "p90_s"} over the results' build_seconds + eval_seconds
// (linear interpolation between ranks; null when there are no results).
nlohmann::json latency_summary(const std::vector<nlohmann::json>& results);

// Writes `candidate` as a self-contained KernelBench ModelNew file: a fast-route candidate
// (mblast_cuda.load) is rewritten to compile its CUDA with load_inline; any other candidate is
// already one and is copied. Throws mblast::Error when the export fails.
void export_kernelbench(const std::filesystem::path& candidate, const std::filesystem::path& out,
                        const std::filesystem::path& python);

// The worker configuration for judging with `options` under `python` (a Python with PyTorch):
// the worker package, the device, per-worker scratch folders and the CUDA build cache.
// options.cache_dir must be set.
WorkerConfig eval_worker_config(const EvalOptions& options, const std::filesystem::path& python);

// The cache folder used when EvalOptions::cache_dir is empty.
std::filesystem::path default_cache_dir();

}  // namespace mblast
