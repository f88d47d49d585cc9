#include "mblast/eval.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mblast/cuda_build.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/worker.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw input_error("cannot read " + std::string(what) + " " + path.string(),
                      "check that the file exists and is readable");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every field of the §8 object present, so that scripts can rely on them.
nlohmann::json empty_result(const EvalOptions& options) {
  return {{"problem", fs::absolute(options.problem).string()},
          {"candidate", fs::absolute(options.candidate).string()},
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

bool is_cuda_device(const std::string& device) { return device.rfind("cuda", 0) == 0; }

// Compiles every CUDA source in the candidate up front, in parallel, into the cache the worker's
// mblast_cuda.load() reads. Returns the build record; sets result.error on a compiler error.
nlohmann::json build_cuda(const std::string& candidate_text, const fs::path& cache_dir,
                          nlohmann::json& result) {
  nlohmann::json builds = nlohmann::json::array();
  auto sources = extract_cuda_sources(candidate_text);
  if (sources.empty()) return builds;
  CudaBuildOptions options;
  options.cache_dir = cache_dir;
  options.arch = detect_cuda_arch();
  if (auto nvcc = find_nvcc()) {
    options.nvcc = *nvcc;
  } else {
    throw input_error("the candidate contains CUDA code but nvcc was not found",
                      "install the CUDA toolkit or set MBLAST_NVCC; `mblast doctor` checks it");
  }
  for (const auto& build : build_all(sources, options)) {
    builds.push_back({{"key", build.key},
                      {"ok", build.ok},
                      {"cached", build.cached},
                      {"seconds", build.seconds}});
    if (!build.ok && result["error"].is_null()) {
      result["error"] = "compile error:\n" + build.log;
      result["error_kind"] = "compile";
    }
  }
  return builds;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// The device's measured copy bandwidth and fp32 matmul rate, the speed-of-light ceilings.
// Measured once per machine and device by the worker and cached, since it takes seconds.
nlohmann::json device_ceilings(const EvalOptions& options, const fs::path& cache_dir,
                               WorkerPool& workers) {
  std::string device = options.device;
  std::replace(device.begin(), device.end(), ':', '-');
  const fs::path path = cache_dir / "ceilings" / (host_name() + "-" + device + ".json");
  if (std::ifstream in(path); in) {
    try {
      return nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error&) {
      spdlog::warn("ignoring unreadable ceilings cache {}", path.string());
    }
  }
  auto outcome = workers.call({{"op", "ceilings"}, {"device", options.device}}, options.timeout);
  if (!outcome.completed || !outcome.response.value("error", nlohmann::json()).is_null()) {
    spdlog::warn("could not measure the device's ceilings ({}); no speed-of-light figures",
                 outcome.completed ? outcome.response["error"].dump() : outcome.failure);
    return nullptr;
  }
  nlohmann::json ceilings = {{"bandwidth_gbs", outcome.response["bandwidth_gbs"]},
                             {"peak_tflops", outcome.response["peak_tflops_fp32"]},
                             {"device_name", outcome.response.value("device_name", "")},
                             {"measured_at", utc_now()}};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream(path) << ceilings.dump(2) << "\n";
  return ceilings;
}

}  // namespace

fs::path default_cache_dir() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache && *cache) return fs::path(cache) / "mblast";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".cache" / "mblast";
}

nlohmann::json evaluate(const EvalOptions& options, WorkerPool& workers) {
  const std::string candidate_text = read_file(options.candidate, "candidate");
  read_file(options.problem, "problem");
  if (options.seeds < 1) throw input_error("--seeds must be at least 1");
  const fs::path cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;

  nlohmann::json result = empty_result(options);
  const auto started = std::chrono::steady_clock::now();
  if (options.backend == "cuda" && is_cuda_device(options.device)) {
    result["builds"] = build_cuda(candidate_text, cache_dir / "cuda", result);
    if (!result["error"].is_null()) return result;
  }

  auto ceilings = device_ceilings(options, cache_dir, workers);
  nlohmann::json seeds = nlohmann::json::array();
  for (int i = 0; i < options.seeds; ++i)
    seeds.push_back(options.seed + static_cast<std::uint64_t>(i));
  nlohmann::json baselines = {"eager"};
  if (options.compile_baseline) baselines.push_back("compile");
  nlohmann::json request = {
      {"op", "eval"},
      {"problem", fs::absolute(options.problem).string()},
      {"candidate", fs::absolute(options.candidate).string()},
      {"device", options.device},
      {"seeds", seeds},
      {"atol", options.atol},
      {"rtol", options.rtol},
      {"tolerance_policy", options.tolerance_policy},
      {"allow_tf32", options.allow_tf32},
      {"baselines", baselines},
      {"cache_dir", (cache_dir / "reference").string()},
      {"device_ceilings", ceilings.is_object()
                              ? nlohmann::json{{"bandwidth_gbs", ceilings["bandwidth_gbs"]},
                                               {"peak_tflops", ceilings["peak_tflops"]}}
                              : nlohmann::json()},
      {"timing", options.timing ? nlohmann::json{{"runs", options.timing_runs},
                                                 {"warmup", 5},
                                                 {"input_sets", 3},
                                                 {"l2_flush", true}}
                                : nlohmann::json()},
  };
  auto outcome = workers.call(request, options.timeout);
  result["sandbox"] = outcome.sandbox;
  result["worker"] = outcome.ready;
  if (!outcome.completed) {
    result["error"] =
        outcome.failure +
        (outcome.stderr_tail.empty() ? "" : "\n--- worker stderr ---\n" + outcome.stderr_tail);
    result["error_kind"] =
        outcome.failure.find("timed out") != std::string::npos ? "timeout" : "crash";
    return result;
  }
  const auto& response = outcome.response;
  if (response.value("error_kind", nlohmann::json()) == "task") {
    throw input_error(response.value("error", std::string("the problem file is unusable")),
                      "fix the problem file; it must define Model, get_inputs() and "
                      "get_init_inputs() as KernelBench problems do");
  }
  for (const auto& [key, value] : response.items()) {
    if (key != "ok" && key != "traceback") result[key] = value;
  }
  if (!response.value("traceback", nlohmann::json()).is_null() && !result["error"].is_null()) {
    result["traceback"] = response["traceback"];
  }
  result["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace mblast
