#pragma once
// Judging CUDA candidates (and plain PyTorch ones on the CPU): build (nvcc, cached), verify over
// several seeds with the anti-cheat checks, time against the eager baseline, in the Python worker
// (worker_pool.hpp). Used by `mblast eval` and by the CUDA backend of the loop.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/primer.hpp"
#include "cuda/worker_pool.hpp"
#include "mblast/backend.hpp"
#include "mblast/eval_options.hpp"

namespace mblast {

// The worker's eval request (worker/protocol.schema.json): judging `candidate` of
// options.problem with the reference cache under cache_dir and the device's measured ceilings
// (null: none).
nlohmann::json worker_eval_request(const EvalOptions& options,
                                   const std::filesystem::path& candidate,
                                   const std::filesystem::path& cache_dir,
                                   const nlohmann::json& ceilings);
// A request's limits from the options: --timeout, the compile allowance, the run's deadline.
CallLimits call_limits(const EvalOptions& options);
// options.cache_dir, else default_cache_dir(), absolute.
std::filesystem::path resolved_cache_dir(const EvalOptions& options);

// One result per workload of a request with workloads (EvalOptions::workloads): the first is
// `result` without "more_workloads", then its "more_workloads". A worker that ended without an
// answer during workload i ("workload_index") judged the ones before it correct: they come first,
// correct and without figures (lost with the worker), then its failure.
std::vector<nlohmann::json> split_workloads(nlohmann::json result);

// "cuda" or "cuda:N" (not "cpu").
bool is_cuda_device(const std::string& device);

// Throws an input error when the worker reported that it could not start (the device cannot be
// initialised, PyTorch is broken): every candidate would fail alike, so it is the request's or
// the machine's problem, not the candidate's.
void refuse_unstartable(const WorkerOutcome& outcome, const EvalOptions& options);

// The result object of docs/ARCHITECTURE.md §3: correct, max_abs_err, max_rel_err, ref_ms, cand_ms,
// speedup, flags, error, plus tolerance, timing, build and sandbox details, the worker's
// phase_seconds, and build_seconds (its CUDA builds), eval_seconds (from taking a worker to its
// answer) and worker_wait_seconds (the part of eval_seconds spent waiting for the worker's ready
// line). Throws mblast::Error (exit 2) when the problem itself is unusable; a bad candidate is a
// result, not an exception.
nlohmann::json evaluate(const EvalOptions& options, WorkerPool& workers);

// Judges several candidates of options.problem (options.candidate is ignored) with one pool,
// results in the order given. The CUDA sources of all candidates are compiled first, in
// parallel, while the pool's first worker starts; the device ceilings are looked up once; with
// one worker pre-started, each candidate after the first finds a ready worker, so Python and
// CUDA start-up stay out of its latency. Throws as evaluate() does.
// keep_prestarted: a worker stays started ahead after the last candidate too (the eval server).
// A candidate `ahead` evaluated ahead (Primer::take) goes on in that worker.
std::vector<nlohmann::json> evaluate_all(const EvalOptions& options,
                                         const std::vector<std::filesystem::path>& candidates,
                                         WorkerPool& workers, bool keep_prestarted = false,
                                         Primer* ahead = nullptr);

// One candidate's CUDA sources compiled (cached by content), for evaluate_artifact.
Artifact build_artifact(const EvalOptions& options, const std::filesystem::path& candidate);
// A built candidate judged by a worker of the pool (options.candidate is ignored); a failed
// build gives its compile error without a worker.
nlohmann::json evaluate_artifact(const EvalOptions& options, const Artifact& artifact,
                                 WorkerPool& workers, Primer* ahead = nullptr);
// Starts evaluating options.candidate ahead with `ahead`, in `workers` (the pool of its
// evaluation): the request its evaluation will send, guessed in step `step` of the run
// (Primer::start). False where nothing started.
bool evaluate_ahead(const EvalOptions& options, WorkerPool& workers, Primer& ahead, int step = 0);

// Writes `candidate` as a self-contained KernelBench ModelNew file: a fast-route candidate
// (mblast_cuda.load) is rewritten to compile its CUDA with load_inline; any other candidate is
// already one and is copied. Throws mblast::Error when the export fails.
void export_kernelbench(const std::filesystem::path& candidate, const std::filesystem::path& out,
                        const std::filesystem::path& python);

// The worker configuration for judging with `options` under `python` (a Python with PyTorch):
// the worker package, the device, per-worker scratch folders and the CUDA build cache.
// options.cache_dir must be set.
WorkerConfig eval_worker_config(const EvalOptions& options, const std::filesystem::path& python);

}  // namespace mblast
