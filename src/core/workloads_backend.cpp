#include "core/workloads_backend.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/optimize_support.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/json_fields.hpp"

namespace mblast {

namespace fs = std::filesystem;
using optimize_detail::extra_number;

namespace {

// What `get` gives for every result, or nullopt when one lacks it.
template <class Get>
std::optional<std::vector<double>> every(const std::vector<EvalResult>& results, Get get) {
  std::vector<double> values;
  for (const auto& r : results) {
    const std::optional<double> value = get(r);
    if (!value) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

std::optional<double> geometric_mean(const std::optional<std::vector<double>>& values) {
  if (!values || values->empty()) return std::nullopt;
  double log_sum = 0;
  for (const double v : *values) {
    if (v <= 0) return std::nullopt;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values->size()));
}

std::optional<double> sum(const std::optional<std::vector<double>>& values) {
  if (!values || values->empty()) return std::nullopt;
  double total = 0;
  for (const double v : *values) total += v;
  return total;
}

std::optional<double> mean(const std::optional<std::vector<double>>& values) {
  const auto total = sum(values);
  if (!total) return std::nullopt;
  return *total / static_cast<double>(values->size());
}

std::optional<double> geomean(const std::vector<EvalResult>& results,
                              std::optional<double> EvalResult::*field) {
  return geometric_mean(every(results, [field](const EvalResult& r) { return r.*field; }));
}

// extra[key] of every result.
std::optional<std::vector<double>> every_extra(const std::vector<EvalResult>& results,
                                               const char* key) {
  return every(results, [key](const EvalResult& r) { return extra_number(r, key); });
}

// The worker that judged it (workloads judged together share one); null where none did.
nlohmann::json worker_pid(const EvalResult& r) {
  const auto worker = r.extra.find("worker");
  if (worker == r.extra.end() || !worker->is_object()) return nullptr;
  return worker->value("pid", nlohmann::json());
}

// The worker's time on this workload: the whole, the candidate's import and its first call
// (compiles for this shape), so that a step's wall can be split over its workloads.
nlohmann::json worker_phases(const EvalResult& r) {
  const auto phases = r.extra.find("phase_seconds");
  if (phases == r.extra.end() || !phases->is_object()) return nullptr;
  nlohmann::json kept = nlohmann::json::object();
  for (const char* key : {"total", "load", "trials/first_call"}) {
    const auto value = phases->find(key);
    if (value != phases->end() && value->is_number()) kept[key] = *value;
  }
  return kept;
}

nlohmann::json workload_entry(const SolWorkload& workload, const EvalResult& r) {
  return {{"uuid", workload.uuid},
          {"axes", workload.axes},
          {"correct", r.correct},
          {"error_kind", r.correct ? nlohmann::json() : nlohmann::json(to_string(r.error_kind))},
          {"ref_ms", optional_json(r.ref_ms)},
          {"cand_ms", optional_json(r.cand_ms)},
          {"speedup", optional_json(r.speedup)},
          {"max_abs_err", optional_json(r.max_abs_err)},
          {"compile_ms", optional_json(r.compile_ms)},
          {"sol_ms", optional_json(extra_number(r, "sol_ms"))},
          {"sol_score", optional_json(extra_number(r, "sol_score"))},
          {"tolerance", workload.tolerance},
          {"worker_pid", worker_pid(r)},
          {"phase_seconds", worker_phases(r)}};
}

// The worker's phases over every workload, added up by name: the problem's whole cost per phase,
// as its build, evaluation and wall seconds are (each workload's own stay in its entry).
nlohmann::json summed_phases(const std::vector<EvalResult>& results) {
  nlohmann::json total = nlohmann::json::object();
  for (const auto& r : results) {
    const auto phases = r.extra.find("phase_seconds");
    if (phases == r.extra.end() || !phases->is_object()) continue;
    for (const auto& [name, value] : phases->items()) {
      if (value.is_number()) total[name] = total.value(name, 0.0) + value.get<double>();
    }
  }
  return total;
}

void set_or_erase(nlohmann::json& object, const char* key, std::optional<double> value) {
  if (value) {
    object[key] = *value;
  } else {
    object.erase(key);
  }
}

// The workload at the median of the workloads' sizes (the minimal bytes the worker counts; the
// eager time where a result lacks them), the smaller of the two middle ones, among those
// profiled: the problem's typical shape. Its signature stands for the problem, so that the
// state, a CUDA graph's headroom and the region windows are decided at a typical shape rather
// than at whichever workload the definition lists first. Counted sizes keep the choice the same
// from one evaluation to the next where eager times are close. Nullopt where none was profiled.
std::optional<std::size_t> typical_workload(const std::vector<EvalResult>& results) {
  std::vector<std::size_t> profiled;
  bool counted = true;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ref_ms || results[i].signature.to_json().is_null()) continue;
    profiled.push_back(i);
    counted = counted && extra_number(results[i], "min_bytes").has_value();
  }
  if (profiled.empty()) return std::nullopt;
  const auto size = [&](std::size_t i) {
    return counted ? *extra_number(results[i], "min_bytes") : *results[i].ref_ms;
  };
  std::stable_sort(profiled.begin(), profiled.end(),
                   [&](std::size_t a, std::size_t b) { return size(a) < size(b); });
  return profiled[(profiled.size() - 1) / 2];
}

}  // namespace

EvalResult combine_workloads(const SolProblem& problem, const std::vector<EvalResult>& results) {
  if (results.empty()) return EvalResult::failure(ErrorKind::task, "no workload was judged");
  nlohmann::json entries = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size() && i < problem.workloads.size(); ++i) {
    entries.push_back(workload_entry(problem.workloads[i], results[i]));
  }
  const auto failed =
      std::find_if(results.begin(), results.end(), [](const EvalResult& r) { return !r.correct; });
  const auto typical = typical_workload(results);
  // The per-shape facts (counted bytes and FLOPs, the judged files) are the typical workload's,
  // as its signature is: the failure's where one failed.
  EvalResult combined = failed != results.end() ? *failed
                        : typical               ? results[*typical]
                                                : results.front();
  combined.extra["workloads"] = entries;
  combined.extra["workloads_total"] = problem.workloads.size();
  if (failed != results.end()) {
    const auto index = static_cast<std::size_t>(failed - results.begin());
    combined.error = "workload " + std::to_string(index + 1) + " of " +
                     std::to_string(problem.workloads.size()) + " (" +
                     problem.workloads[index].uuid + "): " + failed->error.value_or("failed");
    return combined;
  }
  if (typical && *typical < problem.workloads.size()) {
    combined.extra["signature_workload"] = problem.workloads[*typical].uuid;
  }
  combined.ref_ms = geomean(results, &EvalResult::ref_ms);
  combined.cand_ms = geomean(results, &EvalResult::cand_ms);
  combined.speedup = geomean(results, &EvalResult::speedup);
  combined.compile_ms = geomean(results, &EvalResult::compile_ms);
  combined.speedup_vs_compile = geomean(results, &EvalResult::speedup_vs_compile);
  for (const auto& r : results) {
    if (r.max_abs_err)
      combined.max_abs_err = std::max(combined.max_abs_err.value_or(0), *r.max_abs_err);
    if (r.max_rel_err)
      combined.max_rel_err = std::max(combined.max_rel_err.value_or(0), *r.max_rel_err);
    for (const auto& flag : r.flags) {
      if (std::find(combined.flags.begin(), combined.flags.end(), flag) == combined.flags.end()) {
        combined.flags.push_back(flag);
      }
    }
  }
  for (const char* cost :
       {"build_seconds", "eval_seconds", "wall_seconds", "worker_wait_seconds"}) {
    set_or_erase(combined.extra, cost, sum(every_extra(results, cost)));
  }
  if (auto phases = summed_phases(results); !phases.empty())
    combined.extra["phase_seconds"] = phases;
  set_or_erase(combined.extra, "sol_ms", geometric_mean(every_extra(results, "sol_ms")));
  set_or_erase(combined.extra, "sol_score", mean(every_extra(results, "sol_score")));
  set_or_erase(combined.extra, "sol_score_vs_compile",
               mean(every_extra(results, "sol_score_vs_compile")));
  return combined;
}

namespace {

class WorkloadsBackend final : public Backend {
 public:
  WorkloadsBackend(std::unique_ptr<Backend> inner, SolProblem problem)
      : inner_(std::move(inner)), problem_(std::move(problem)), traits_(inner_->traits()) {
    traits_.harness.clear();  // KernelBench's harness takes none of these problems
  }

  const BackendTraits& traits() const override { return traits_; }
  std::optional<EvalResult> measured_baseline() override { return inner_->measured_baseline(); }
  std::string hardware(const EvalResult& baseline) override { return inner_->hardware(baseline); }
  // Workload 1's problem file, with the other workloads' shapes: a candidate must hold for all.
  std::optional<std::string> judged_problem_source() override {
    auto inner = inner_->judged_problem_source();
    std::string source =
        inner ? *inner : read_input_file(problem_.workloads.front().file, "problem");
    source += "\n# mblast judges a candidate on every workload of this problem, in this order:\n";
    for (const auto& workload : problem_.workloads) {
      source += "#   " + workload.uuid + ": " + workload.axes.dump() + "\n";
    }
    return source;
  }
  Artifact build(const fs::path& candidate) override { return inner_->build(candidate); }

  EvalResult evaluate(const Artifact& artifact, bool compile_baseline) override {
    std::vector<fs::path> files;
    for (const auto& workload : problem_.workloads) files.push_back(workload.file);
    auto judged = inner_->evaluate_workloads(files, artifact, compile_baseline);
    if (!judged) throw input_error("the backend cannot judge a workload's problem file");
    return combine_workloads(problem_, *judged);
  }

  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    return inner_->assemble(files);
  }
  Builtin builtin(const std::string& transform, const fs::path& current, bool current_is_reference,
                  const std::vector<std::string>& region_ops) override {
    return inner_->builtin(transform, current, current_is_reference, region_ops);
  }
  bool host_idle_while_judging() const override { return inner_->host_idle_while_judging(); }
  std::map<std::string, std::string> nothing_to_change(
      const std::vector<std::string>& transforms) override {
    return inner_->nothing_to_change(transforms);
  }
  std::optional<ProgramRegions> program_regions() override { return inner_->program_regions(); }
  bool export_for_harness(const fs::path& /*best*/, const fs::path& /*out*/) override {
    return false;
  }
  void set_deadline(std::chrono::steady_clock::time_point until) override {
    inner_->set_deadline(until);
  }
  void stop_prestarting() override { inner_->stop_prestarting(); }
  void prebuild(const fs::path& candidate) override { inner_->prebuild(candidate); }
  void begin_step(int step) override { inner_->begin_step(step); }
  void stop_prebuilding() override { inner_->stop_prebuilding(); }

 private:
  std::unique_ptr<Backend> inner_;
  SolProblem problem_;
  BackendTraits traits_;
};

}  // namespace

std::unique_ptr<Backend> make_workloads_backend(std::unique_ptr<Backend> inner,
                                                SolProblem problem) {
  if (inner->traits().native) {
    throw input_error(
        "SOL-ExecBench problems are judged by PyTorch backends, not by " + inner->traits().name,
        "use --backend cuda (with --device cpu where there is no GPU)");
  }
  return std::make_unique<WorkloadsBackend>(std::move(inner), std::move(problem));
}

}  // namespace mblast
