#include "core/judge.hpp"

#include <spdlog/spdlog.h>

#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "cuda/cuda_eval.hpp"
#include "native/native_eval.hpp"

namespace mblast {

namespace fs = std::filesystem;

Judge::Judge(EvalOptions options, const fs::path& python, const RunDir& run, std::size_t prestarted)
    : options_(std::move(options)), run_(run) {
  if (options_.backend == "cuda") {
    workers_ = std::make_unique<WorkerPool>(eval_worker_config(options_, python), prestarted);
  } else {
    native_ = make_native_backend(options_);
    bundles_ = make_bundles(options_.problem, options_.seeds, options_.seed, options_.cache_dir,
                            python, options_.timing_runs);
  }
}

void Judge::stop_prestarting() {
  if (workers_) workers_->set_prestarted(0);
}

nlohmann::json Judge::native_baseline() {
  const auto baselines = native_->baselines(options_.problem, bundles_);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& b : baselines) {
    rows.push_back({{"name", b.name}, {"value", b.value}, {"unit", b.unit}, {"detail", b.detail}});
  }
  nlohmann::json result = {{"correct", true},
                           {"device", options_.device},
                           {"device_name", native_->hardware()},
                           {"baselines", rows},
                           {"torch_version", bundles_.meta.value("torch_version", "")},
                           {"signature", nlohmann::json::object()}};
  if (!baselines.empty()) {
    result[baselines.front().unit == "cost" ? "ref_cost" : "ref_ms"] = baselines.front().value;
    result["speedup_baseline"] = baselines.front().name;
  }
  return result;
}

nlohmann::json Judge::judge(const fs::path& candidate, bool compile_baseline) {
  if (auto stored = run_.stored_result(candidate)) {
    spdlog::debug("judge: {} was judged earlier in this run", candidate.filename().string());
    return *stored;
  }
  EvalOptions options = options_;
  options.candidate = candidate;
  options.compile_baseline = compile_baseline;
  nlohmann::json result = native_ ? evaluate_native(options, candidate, *native_, bundles_)
                                  : evaluate(options, *workers_);
  if (result.value("stopped_by_time_limit", false)) return result;
  ++evaluations_run_;
  // A step redone after a kill then writes the same attempt rows (their ids hash this time).
  result["judged_at"] = utc_now();
  run_.store_result(candidate, result);
  return result;
}

std::string attempt_outcome(const nlohmann::json& result) {
  if (result.value("correct", false)) return "correct";
  const auto kind_value = result.value("error_kind", nlohmann::json());
  const std::string kind = kind_value.is_string() ? kind_value.get<std::string>() : "";
  if (kind == "compile" || kind == "candidate_load") return "compile_error";
  if (kind == "timeout") return "timeout";
  if (kind == "cheat") return "cheat";
  if (kind == "crash" || kind == "candidate_runtime") return "runtime_error";
  return "incorrect";
}

FailureReport failure_report(const nlohmann::json& result) {
  FailureReport report;
  report.outcome = attempt_outcome(result);
  const auto error = result.value("error", nlohmann::json());
  report.error = error.is_string() ? error.get<std::string>() : "";
  if (result.value("max_abs_err", nlohmann::json()).is_number()) {
    report.max_abs_err = result["max_abs_err"].get<double>();
  }
  if (result.value("max_rel_err", nlohmann::json()).is_number()) {
    report.max_rel_err = result["max_rel_err"].get<double>();
  }
  const auto location = result.value("err_location", nlohmann::json());
  if (location.is_object()) {
    report.location = "output " + location.value("output", nlohmann::json(0)).dump() + " at " +
                      location.value("index", nlohmann::json::array()).dump() + ": candidate " +
                      location.value("cand", nlohmann::json()).dump() + ", reference " +
                      location.value("ref", nlohmann::json()).dump();
  }
  for (const auto& flag : result.value("flags", nlohmann::json::array())) {
    if (flag.is_string()) report.flags.push_back(flag.get<std::string>());
  }
  return report;
}

std::string builtin_candidate(const fs::path& python, const std::string& transform,
                              const fs::path& base, bool over) {
  ProcessSpec spec;
  spec.argv = {python.string(), "-m", "mblast_builtin"};
  if (over) spec.argv.push_back("--over");
  spec.argv.push_back(transform);
  spec.argv.push_back(fs::absolute(base).string());
  spec.env["PYTHONPATH"] = worker_directory().string();
  spec.timeout = std::chrono::seconds(60);
  const ProcessResult result = run_process(spec);
  if (!result.ok()) {
    throw job_error("the built-in transform " + transform + " could not be generated (" +
                        result.describe() + "): " + result.err,
                    "report this with the problem file; built-ins need no LLM and should not fail");
  }
  return result.out;
}

}  // namespace mblast
