#include "mblast/eval_options.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "cuda/compile_cache.hpp"
#include "cuda/cuda_build.hpp"
#include "cuda/cuda_eval.hpp"
#include "cuda/device_ceilings.hpp"
#include "cuda/worker_pool.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "mblast/speed_of_light.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

bool is_cuda_device(const std::string& device) { return device.rfind("cuda", 0) == 0; }

namespace {

// Every field of the §8 object present, so that scripts can rely on them.
nlohmann::json empty_result(const EvalOptions& options, const fs::path& candidate) {
  return {{"problem", fs::absolute(options.problem).string()},
          {"candidate", fs::absolute(candidate).string()},
          {"backend", options.backend},
          {"device", options.device},
          {"correct", false},
          {"max_abs_err", nullptr},
          {"max_rel_err", nullptr},
          {"ref_ms", nullptr},
          {"cand_ms", nullptr},
          {"speedup", nullptr},
          {"flags", nlohmann::json::array()},
          {"error", nullptr},
          {"error_kind", nullptr}};
}

// One candidate on its way through evaluate_all.
struct Pending {
  fs::path candidate;
  std::string text;
  nlohmann::json result;
  double build_seconds = 0;
};

// The architecture candidates are built for, detected once per process (nvidia-smi takes a while);
// the workers build for the same one.
const std::string& build_arch() {
  static const std::string arch = detect_cuda_arch();
  return arch;
}

// Compiles the CUDA sources of every candidate up front, in one parallel build_all, into the
// cache the worker's mblast_cuda.load() reads. Records each candidate's builds in its result and
// sets result.error on a compiler error.
void build_cuda(std::vector<Pending>& pending, const fs::path& cache_dir) {
  std::vector<std::string> sources;
  std::vector<std::size_t> owner;  // index into pending, per source
  for (std::size_t i = 0; i < pending.size(); ++i) {
    pending[i].result["builds"] = nlohmann::json::array();
    for (auto& source : extract_cuda_sources(pending[i].text)) {
      sources.push_back(std::move(source));
      owner.push_back(i);
    }
  }
  if (sources.empty()) return;
  CudaBuildOptions options;
  options.cache_dir = cache_dir;
  options.arch = build_arch();
  if (auto nvcc = find_nvcc()) {
    options.nvcc = *nvcc;
  } else {
    throw input_error("the candidate contains CUDA code but nvcc was not found",
                      "install the CUDA toolkit or set MBLAST_NVCC; `mblast doctor` checks it");
  }
  const auto builds = build_all(sources, options);
  for (std::size_t k = 0; k < builds.size(); ++k) {
    const auto& build = builds[k];
    auto& item = pending[owner[k]];
    item.result["builds"].push_back({{"key", build.key},
                                     {"ok", build.ok},
                                     {"cached", build.cached},
                                     {"seconds", build.seconds}});
    item.build_seconds += build.seconds;
    if (!build.ok && item.result["error"].is_null()) {
      item.result["error"] = "compile error:\n" + build.log;
      item.result["error_kind"] = "compile";
    }
  }
}

}  // namespace

// A worker that reports it cannot start (the device cannot be initialised, PyTorch is broken)
// will fail for every candidate: that is a problem with the request or the machine, not with the
// candidate.
void refuse_unstartable(const WorkerOutcome& outcome, const EvalOptions& options) {
  if (outcome.completed || outcome.failure.rfind("worker could not start", 0) != 0) return;
  std::string hint = "check `mblast doctor`";
  if (is_cuda_device(options.device)) {
    hint =
        "PyTorch sees no usable GPU here: use --device cpu for plain PyTorch candidates, or "
        "run on a machine with an NVIDIA GPU (`mblast doctor` checks it)";
  }
  throw input_error(outcome.failure, hint);
}

void export_kernelbench(const fs::path& candidate, const fs::path& out, const fs::path& python) {
  const std::string text = read_input_file(candidate, "candidate");
  std::string exported = text;
  if (text.find("mblast_cuda") != std::string::npos) {
    ProcessSpec spec;
    spec.argv = {python.string(), "-m", "mblast_export", fs::absolute(candidate).string()};
    spec.env["PYTHONPATH"] = worker_directory().string();
    spec.timeout = std::chrono::seconds(60);
    auto result = run_process(spec);
    if (!result.ok()) {
      throw job_error("exporting " + candidate.string() + " failed (" + result.describe() +
                      "): " + result.err);
    }
    exported = result.out;
  }
  if (const std::error_code ec = write_file_atomically(out, exported)) {
    throw input_error("cannot write " + out.string() + ": " + ec.message(),
                      "give a file path in a writable folder");
  }
}

// What the worker's Nsight Compute step may take (its "ncu_timeout_s"), on top of a candidate's
// own allowance: a second process replays every kernel of a forward several times.
constexpr std::chrono::seconds kNcuAllowance{180};

nlohmann::json worker_eval_request(const EvalOptions& options, const fs::path& candidate,
                                   const fs::path& cache_dir, const nlohmann::json& ceilings) {
  nlohmann::json seeds = nlohmann::json::array();
  for (int i = 0; i < options.seeds; ++i)
    seeds.push_back(options.seed + static_cast<std::uint64_t>(i));
  nlohmann::json baselines = {"eager"};
  if (options.compile_baseline) baselines.push_back("compile");
  nlohmann::json workloads = nlohmann::json::array();
  for (const auto& w : options.workloads) workloads.push_back(fs::absolute(w).string());
  return {
      {"op", "eval"},
      {"problem", fs::absolute(options.problem).string()},
      {"workloads", workloads},
      {"candidate", fs::absolute(candidate).string()},
      {"device", options.device},
      {"seeds", seeds},
      {"atol", options.atol},
      {"rtol", options.rtol},
      {"tolerance_policy", options.tolerance_policy},
      {"allow_tf32", options.allow_tf32},
      {"profile", options.profile},
      {"profile_reference", options.profile_reference},
      {"profiler", options.profiler},
      {"ncu_launch_count", options.ncu_kernels},
      {"ncu_timeout_s", static_cast<double>(kNcuAllowance.count())},
      {"baselines", baselines},
      {"cache_dir", (cache_dir / "reference").string()},
      {"device_ceilings",
       ceilings.is_object() ? nlohmann::json{{"bandwidth_gbs", ceilings["bandwidth_gbs"]},
                                             {"peak_tflops", ceilings["peak_tflops"]},
                                             {"peak_tflops_tf32",
                                              ceilings.value("peak_tflops_tf32", nlohmann::json())},
                                             {"peak_tflops_bf16",
                                              ceilings.value("peak_tflops_bf16", nlohmann::json())},
                                             {"peak_tflops_fp16",
                                              ceilings.value("peak_tflops_fp16", nlohmann::json())}}
                            : nlohmann::json()},
      {"timing", options.timing ? nlohmann::json{{"runs", options.timing_runs},
                                                 {"warmup", 5},
                                                 {"input_sets", 3},
                                                 {"l2_flush", true},
                                                 {"autograd", options.timing_autograd}}
                                : nlohmann::json()},
  };
}

fs::path default_cache_dir() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache && *cache) return fs::path(cache) / "mblast";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".cache" / "mblast";
}

CallLimits call_limits(const EvalOptions& options) {
  CallLimits limits;
  // --timeout is each problem's: a request that judges more workloads gets it once per problem.
  limits.total = options.timeout * static_cast<long>(1 + options.workloads.size());
  limits.compile = compile_allowance(options);
  limits.until = options.until;
  if (options.profile && options.profiler == "ncu") limits.base += kNcuAllowance;
  return limits;
}

fs::path resolved_cache_dir(const EvalOptions& options) {
  return fs::absolute(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir);
}

namespace {

// -v: where the worker spent the evaluation, phase by phase.
void log_phases(const fs::path& candidate, const nlohmann::json& result) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  std::string phases;
  const auto seconds = result.value("phase_seconds", nlohmann::json());
  if (seconds.is_object()) {
    for (const auto& [name, value] : seconds.items()) {
      if (name.find('/') == std::string::npos && value.is_number()) {
        phases +=
            fmt::format("{}{} {:.3f} s", phases.empty() ? "" : ", ", name, value.get<double>());
      }
    }
  }
  spdlog::debug("{}: correct {}, speedup {}; {}", candidate.filename().string(),
                result.value("correct", false), result.value("speedup", nlohmann::json()).dump(),
                phases.empty() ? "no phases reported" : phases);
}

void refuse_task_error(const nlohmann::json& response) {
  if (response.value("error_kind", nlohmann::json()) == "task") {
    throw input_error(response.value("error", std::string("the problem file is unusable")),
                      "fix the problem file; it must define Model, get_inputs() and "
                      "get_init_inputs() as KernelBench problems do");
  }
}

// The worker's response (one problem's) into the candidate's result.
void fold_response(nlohmann::json& result, const nlohmann::json& response,
                   const nlohmann::json& ceilings) {
  for (const auto& [key, value] : response.items()) {
    if (key != "ok" && key != "traceback" && key != "more_workloads") result[key] = value;
  }
  add_speed_of_light_to_signatures(result, ceilings);
  if (!response.value("traceback", nlohmann::json()).is_null() && !result["error"].is_null()) {
    result["traceback"] = response["traceback"];
  }
}

// Sends one built candidate to a worker and folds the answer into its result.
void judge(const EvalOptions& options, Pending& item, const fs::path& cache_dir,
           const nlohmann::json& ceilings, WorkerPool& workers, Primer* ahead) {
  auto& result = item.result;
  result["build_seconds"] = item.build_seconds;
  result["eval_seconds"] = 0.0;
  result["worker_wait_seconds"] = 0.0;
  result["wall_seconds"] = item.build_seconds;
  if (!result["error"].is_null()) return;  // a compile error: no worker needed

  const auto request = worker_eval_request(options, item.candidate, cache_dir, ceilings);
  spdlog::debug("judging {} (built in {:.2f} s)", item.candidate.filename().string(),
                item.build_seconds);
  const auto taken = std::chrono::steady_clock::now();
  const CompileCacheUse compile_cache{problem_compile_cache(cache_dir, options.problem),
                                      options.keep_compile_cache};
  std::optional<WorkerOutcome> taken_over =
      ahead ? ahead->take(request, item.candidate) : std::nullopt;
  auto outcome = taken_over ? std::move(*taken_over)
                            : workers.call(request, call_limits(options), compile_cache);
  const double eval_seconds = seconds_since(taken);
  result["eval_seconds"] = eval_seconds;
  // call() = taking a worker and reading its ready line, then outcome.seconds for the request.
  result["worker_wait_seconds"] = std::max(0.0, eval_seconds - outcome.seconds);
  result["wall_seconds"] = item.build_seconds + eval_seconds;
  result["sandbox"] = outcome.sandbox;
  result["compile_cache"] = {{"trusted", compile_cache.keep},
                             {"copied_in_bytes", outcome.compile_cache_in_bytes},
                             {"kept_bytes", outcome.compile_cache_kept_bytes}};
  result["worker"] = outcome.ready;
  refuse_unstartable(outcome, options);
  if (!outcome.completed) {
    result["error"] =
        outcome.failure +
        (outcome.stderr_tail.empty() ? "" : "\n--- worker stderr ---\n" + outcome.stderr_tail);
    result["error_kind"] =
        outcome.failure.find("timed out") != std::string::npos ? "timeout" : "crash";
    // Stopped by the run's time limit, not the candidate's own: not a verdict on the candidate.
    if (options.until && outcome.limit == "the run's --time-limit")
      result["stopped_by_time_limit"] = true;
    if (!options.workloads.empty()) result["workload_index"] = outcome.workload;
    return;
  }
  const auto& response = outcome.response;
  const auto more = response.value("more_workloads", nlohmann::json());
  refuse_task_error(response);
  if (more.is_array()) std::for_each(more.begin(), more.end(), refuse_task_error);
  // The request's own fields, before the response's: each further workload's result starts from
  // them, its build and worker counted once, in the first.
  nlohmann::json further = result;
  further["build_seconds"] = further["eval_seconds"] = further["worker_wait_seconds"] = 0.0;
  further["wall_seconds"] = 0.0;
  fold_response(result, response, ceilings);
  if (more.is_array()) {
    result["more_workloads"] = nlohmann::json::array();
    for (std::size_t i = 0; i < more.size() && i < options.workloads.size(); ++i) {
      nlohmann::json judged = further;
      judged["problem"] = fs::absolute(options.workloads[i]).string();
      fold_response(judged, more[i], ceilings);
      result["more_workloads"].push_back(std::move(judged));
    }
  }
  log_phases(item.candidate, result);
}

}  // namespace

std::vector<nlohmann::json> evaluate_all(const EvalOptions& options,
                                         const std::vector<fs::path>& candidates,
                                         WorkerPool& workers, bool keep_prestarted, Primer* ahead) {
  std::vector<Pending> pending;
  for (const auto& candidate : candidates) {
    pending.push_back({candidate, read_input_file(candidate, "candidate"),
                       empty_result(options, candidate), 0.0});
  }
  read_input_file(options.problem, "problem");
  if (options.seeds < 1) throw input_error("--seeds must be at least 1");
  const fs::path cache_dir = resolved_cache_dir(options);

  // The pool started its first worker when it was made: it imports while nvcc runs here.
  if (options.backend == "cuda" && is_cuda_device(options.device))
    build_cuda(pending, cache_dir / "cuda");

  nlohmann::json ceilings;
  bool have_ceilings = false;
  std::vector<nlohmann::json> results;
  for (auto& item : pending) {
    double calibration_seconds = 0;
    if (!have_ceilings && item.result["error"].is_null()) {
      ceilings = device_ceilings(options, cache_dir, workers, calibration_seconds);
      have_ceilings = true;
    }
    if (&item == &pending.back() && !keep_prestarted) workers.set_prestarted(0);  // none left
    judge(options, item, cache_dir, ceilings, workers, ahead);
    if (calibration_seconds > 0) item.result["calibration_seconds"] = calibration_seconds;
    results.push_back(std::move(item.result));
  }
  return results;
}

nlohmann::json evaluate(const EvalOptions& options, WorkerPool& workers) {
  return evaluate_all(options, {options.candidate}, workers).front();
}

Artifact build_artifact(const EvalOptions& options, const fs::path& candidate) {
  std::vector<Pending> pending;
  pending.push_back(
      {candidate, read_input_file(candidate, "candidate"), empty_result(options, candidate), 0.0});
  if (options.backend == "cuda" && is_cuda_device(options.device)) {
    build_cuda(pending, resolved_cache_dir(options) / "cuda");
  }
  Artifact artifact;
  artifact.candidate = candidate;
  artifact.builds = pending.front().result.value("builds", nlohmann::json::array());
  artifact.build_seconds = pending.front().build_seconds;
  if (pending.front().result["error"].is_string()) {
    artifact.error = pending.front().result["error"].get<std::string>();
  }
  return artifact;
}

nlohmann::json evaluate_artifact(const EvalOptions& options, const Artifact& artifact,
                                 WorkerPool& workers, Primer* ahead) {
  read_input_file(options.problem, "problem");
  Pending item{
      artifact.candidate, {}, empty_result(options, artifact.candidate), artifact.build_seconds};
  item.result["builds"] = artifact.builds;
  const fs::path cache_dir = resolved_cache_dir(options);
  nlohmann::json ceilings;
  double calibration_seconds = 0;
  if (artifact.error) {
    item.result["error"] = *artifact.error;
    item.result["error_kind"] = "compile";
  } else {
    ceilings = device_ceilings(options, cache_dir, workers, calibration_seconds);
  }
  judge(options, item, cache_dir, ceilings, workers, ahead);
  if (calibration_seconds > 0) item.result["calibration_seconds"] = calibration_seconds;
  return item.result;
}

bool evaluate_ahead(const EvalOptions& options, WorkerPool& workers, Primer& ahead, int step) {
  const fs::path cache_dir = resolved_cache_dir(options);
  double calibration_seconds = 0;  // the ceilings are cached by the evaluations before
  const nlohmann::json ceilings = device_ceilings(options, cache_dir, workers, calibration_seconds);
  const CompileCacheUse compile_cache{problem_compile_cache(cache_dir, options.problem),
                                      options.keep_compile_cache};
  return ahead.start(worker_eval_request(options, options.candidate, cache_dir, ceilings),
                     call_limits(options), compile_cache, options.candidate, step);
}

std::vector<nlohmann::json> split_workloads(nlohmann::json result) {
  std::vector<nlohmann::json> results;
  const int failed_at = result.value("workload_index", 0);
  for (int i = 0; i < failed_at; ++i) {
    nlohmann::json passed = {{"candidate", result.value("candidate", "")},
                             {"backend", result.value("backend", "")},
                             {"device", result.value("device", "")},
                             {"correct", true},
                             {"flags", nlohmann::json::array()},
                             {"error", nullptr},
                             {"error_kind", nullptr}};
    passed["notes"] = {
        "correct, judged in the worker that then failed on a later workload; its "
        "figures were lost with that worker"};
    results.push_back(std::move(passed));
  }
  nlohmann::json more = result.value("more_workloads", nlohmann::json::array());
  result.erase("more_workloads");
  results.push_back(std::move(result));
  for (auto& judged : more) results.push_back(std::move(judged));
  return results;
}

WorkerConfig eval_worker_config(const EvalOptions& options, const fs::path& python) {
  WorkerConfig config;
  config.python = python;
  // The worker's mblast_cuda.load() builds through this binary (`mblast internal cuda-build`),
  // for this architecture and into this cache, so it finds what was pre-built here.
  config.env["MBLAST_CUDA_CACHE"] = (options.cache_dir / "cuda").string();
  config.env["MBLAST_BINARY"] = mblast_binary().string();
  if (is_cuda_device(options.device)) config.env["MBLAST_CUDA_ARCH"] = build_arch();
  config.worker_dir = worker_directory();
  config.device = options.device;
  config.scratch_root = fs::temp_directory_path();
  config.problem_cache = options.cache_dir / "reference";
  if (options.device == "cpu") {
    // Outputs of tens of MB come from mmap by default, and whether a call gets fresh pages
    // (several ms of page faults) or reuses freed ones depended on the allocation order, which
    // timed an identical candidate at 0.5x or 2x the reference. Keeping freed memory in the
    // heap makes both contenders reuse warm pages.
    config.env["MALLOC_MMAP_THRESHOLD_"] = "33554432";  // glibc's maximum: 32 MiB
    config.env["MALLOC_TRIM_THRESHOLD_"] = "1073741824";
  }
  return config;
}

}  // namespace mblast
