// The judge for native candidates (OpenCL, RVV): the backend builds and runs them on the
// problem's tensor bundles; this file decides correctness and speed, with the same result fields
// as the CUDA judge.
#include <algorithm>
#include <chrono>

#include "mblast/eval_options.hpp"
#include "mblast/support.hpp"
#include "native/native_backend.hpp"
#include "native/native_eval.hpp"

namespace mblast {

namespace fs = std::filesystem;

Tolerance native_tolerance(const EvalOptions& options, const nlohmann::json& meta) {
  const auto eager =
      meta.is_object() ? meta.value("eager", nlohmann::json::object()) : nlohmann::json::object();
  // The worker owns the rule (compare.widen_floor): the bundles carry the floor that atol and
  // rtol are raised to unless the policy is strict, so a candidate is never held stricter than
  // PyTorch's own fp32 result on the same inputs (docs/ARCHITECTURE.md §3).
  const double floor = eager.value("widen_floor", 0.0);
  Tolerance t{.atol = options.atol,
              .rtol = options.rtol,
              .policy = options.tolerance_policy,
              .requested_atol = options.atol,
              .requested_rtol = options.rtol};
  if (options.tolerance_policy != "strict" && floor > std::min(t.atol, t.rtol)) {
    t.atol = std::max(t.atol, floor);
    t.rtol = std::max(t.rtol, floor);
    t.widened_by_eager = true;
  }
  return t;
}

nlohmann::json evaluate_native(const EvalOptions& options, const fs::path& candidate,
                               NativeBackend& backend, const BundleSet& bundles) {
  const auto started = std::chrono::steady_clock::now();
  const auto baselines = backend.baselines(options.problem, bundles);
  const Tolerance tolerance = native_tolerance(options, bundles.meta);
  nlohmann::json result = {{"problem", options.problem.string()},
                           {"candidate", candidate.string()},
                           {"backend", backend.name()},
                           {"device", options.device},
                           {"correct", false},
                           {"error", nullptr},
                           {"error_kind", nullptr},
                           {"flags", nlohmann::json::array()},
                           {"max_abs_err", nullptr},
                           {"max_rel_err", nullptr},
                           {"ref_ms", nullptr},
                           {"cand_ms", nullptr},
                           {"speedup", nullptr},
                           {"tolerance", tolerance.to_json()},
                           {"reference_precision", "float64"},
                           {"eager_max_abs_err", bundles.meta["eager"].value("max_abs_err", 0.0)},
                           {"eager_max_rel_err", bundles.meta["eager"].value("max_rel_err", 0.0)},
                           {"trials", nlohmann::json::array()}};

  const NativeRunResult run = backend.run(candidate, bundles);
  result["device_name"] = run.device_name;
  result["build_seconds"] = run.build_seconds;
  result["timing"] = run.timing;
  result["details"] = run.details;
  if (!run.error_kind.empty()) {
    result["error_kind"] = run.error_kind == "compile" ? "compile" : run.error_kind;
    result["error"] = run.error;
  } else {
    const double atol = tolerance.atol;
    const double rtol = tolerance.rtol;
    double max_abs = 0, max_rel = 0;
    bool all_pass = true;
    for (std::size_t i = 0; i < bundles.files.size() && i < run.outputs.size(); ++i) {
      const Bundle bundle = read_bundle(bundles.files[i]);
      const Comparison c =
          compare_outputs(bundle.with_role(TensorRole::expected), run.outputs[i], atol, rtol);
      const auto seed = bundles.meta["seeds"][i].value("seed", 0);
      result["trials"].push_back({{"seed", seed},
                                  {"pass", c.pass},
                                  {"max_abs_err", c.max_abs_err},
                                  {"max_rel_err", c.max_rel_err}});
      max_abs = std::max(max_abs, c.max_abs_err);
      max_rel = std::max(max_rel, c.max_rel_err);
      if (!c.pass && all_pass) {
        all_pass = false;
        result["error"] = "seed " + std::to_string(seed) + ": " + c.error;
        result["error_kind"] = c.error.find("shape") != std::string::npos ? "shape" : "mismatch";
        result["err_location"] = c.location;
      }
    }
    if (run.outputs.size() != bundles.files.size() && all_pass) {
      all_pass = false;
      result["error"] = "the runner returned outputs for " + std::to_string(run.outputs.size()) +
                        " of " + std::to_string(bundles.files.size()) + " seeds";
      result["error_kind"] = "candidate_runtime";
    }
    result["max_abs_err"] = max_abs;
    result["max_rel_err"] = max_rel;
    result["correct"] = all_pass;
  }

  // Speed against every baseline; `speedup` is against the first (primary) one.
  const bool by_cost = run.timing.contains("cost");
  const auto measured = by_cost ? run.timing.value("cost", nlohmann::json())
                                : run.timing.value("median_ms", nlohmann::json());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& b : baselines) {
    nlohmann::json row = {
        {"name", b.name}, {"value", b.value}, {"unit", b.unit}, {"detail", b.detail}};
    if (b.signature.contains("cost_check")) row["cost_check"] = b.signature["cost_check"];
    if (measured.is_number() && measured.get<double>() > 0 && result["correct"].get<bool>()) {
      row["speedup"] = b.value / measured.get<double>();
    }
    rows.push_back(row);
  }
  result["baselines"] = rows;
  result["missing_baselines"] = backend.missing_baselines();
  if (bundles.meta.contains("shrink")) result["shrink"] = bundles.meta["shrink"];
  if (!baselines.empty()) {
    result["speedup_baseline"] = baselines.front().name;
    if (rows.front().contains("speedup")) result["speedup"] = rows.front()["speedup"];
    if (by_cost) {
      result["ref_cost"] = baselines.front().value;
      result["cand_cost"] = measured;
    } else {
      result["ref_ms"] = baselines.front().value;
      result["cand_ms"] = measured;
    }
  }
  result["signature"] =
      run.error_kind.empty() ? backend.signature(run, bundles) : nlohmann::json::object();
  const double seconds = seconds_since(started);
  result["eval_seconds"] = seconds;
  result["wall_seconds"] = seconds;
  return result;
}

}  // namespace mblast
