#include "native/native_judge.hpp"

#include <fstream>
#include <iterator>
#include <utility>

#include "mblast/error.hpp"
#include "native/bundle.hpp"
#include "native/native_eval.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;

class NativeJudge final : public Backend {
 public:
  NativeJudge(BackendTraits traits, const BackendContext& context,
              std::unique_ptr<NativeBackend> native)
      : traits_(std::move(traits)), options_(context.options), native_(std::move(native)) {
    bundles_ = make_bundles(options_.problem, options_.seeds, options_.seed, options_.cache_dir,
                            context.python, options_.timing_runs,
                            shrink_budget(options_.target_value("shrink")));
  }

  const BackendTraits& traits() const override { return traits_; }

  // The native baselines (PyTorch on the CPU, naive OpenCL, plain C) stand for the reference.
  std::optional<EvalResult> measured_baseline() override {
    const auto baselines = native_->baselines(options_.problem, bundles_);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& b : baselines) {
      rows.push_back(
          {{"name", b.name}, {"value", b.value}, {"unit", b.unit}, {"detail", b.detail}});
    }
    nlohmann::json result = {{"correct", true},
                             {"device", options_.device},
                             {"device_name", native_->hardware()},
                             {"baselines", rows},
                             {"torch_version", bundles_.meta.value("torch_version", "")},
                             {"signature", baseline_signature(baselines)}};
    if (!baselines.empty()) {
      result[baselines.front().unit == "cost" ? "ref_cost" : "ref_ms"] = baselines.front().value;
      result["speedup_baseline"] = baselines.front().name;
    }
    result["missing_baselines"] = native_->missing_baselines();
    if (bundles_.meta.contains("shrink")) result["shrink"] = bundles_.meta["shrink"];
    return EvalResult::from_json(result);
  }

  // The loop's first state: the profile of the first baseline that is a kernel of this backend
  // (the naive OpenCL kernel, the better C build), naming it under "profiled".
  static nlohmann::json baseline_signature(const std::vector<NativeBaseline>& baselines) {
    for (const auto& b : baselines) {
      if (!b.signature.is_object() || b.signature.empty()) continue;
      nlohmann::json signature = b.signature;
      signature["profiled"] = b.name;
      return signature;
    }
    return nlohmann::json::object();
  }

  std::string hardware(const EvalResult& /*baseline*/) override { return native_->hardware(); }

  std::optional<std::string> judged_problem_source() override {
    if (!bundles_.meta.contains("shrink")) return std::nullopt;
    const fs::path file =
        bundles_.dir / bundles_.meta["shrink"].value("problem_file", "problem.py");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw job_error("the bundle cache lacks its shrunken problem " + file.string());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // The runner builds and runs a candidate in one child process: a build error comes back as the
  // result's compile error.
  Artifact build(const fs::path& candidate) override {
    Artifact artifact;
    artifact.candidate = candidate;
    return artifact;
  }

  EvalResult evaluate(const Artifact& artifact, bool /*compile_baseline*/) override {
    EvalOptions options = options_;
    options.candidate = artifact.candidate;
    return EvalResult::from_json(evaluate_native(options, artifact.candidate, *native_, bundles_));
  }

  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    return native_->assemble(files);
  }

  Builtin builtin(const std::string& transform, const fs::path& current,
                  bool /*current_is_reference*/,
                  const std::vector<std::string>& region_ops) override {
    if (!region_ops.empty()) return {std::nullopt, "a native kernel has no regions"};
    try {
      return {native_->builtin_variant(transform, current, bundles_), ""};
    } catch (const Error& e) {
      if (e.code() == ExitCode::bad_input) throw;
      // The transform found nothing better than the current kernel (or does not apply to it).
      return {std::nullopt, e.what()};
    }
  }

  bool export_for_harness(const fs::path& /*best*/, const fs::path& /*out*/) override {
    return false;
  }

  // Native runs are bounded by their own per-run timeouts.
  void set_deadline(std::chrono::steady_clock::time_point /*until*/) override {}

 private:
  BackendTraits traits_;
  EvalOptions options_;
  std::unique_ptr<NativeBackend> native_;
  BundleSet bundles_;
};

}  // namespace

std::int64_t shrink_budget(const std::string& text) {
  if (text.empty()) return 0;
  std::size_t used = 0;
  std::int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1) {
    throw input_error("--shrink takes a number of elements, not '" + text + "'",
                      "give the budget of one forward's inputs, parameters and outputs, e.g. "
                      "--shrink 262144");
  }
  return value;
}

std::unique_ptr<Backend> make_native_judge(const BackendTraits& traits,
                                           const BackendContext& context,
                                           std::unique_ptr<NativeBackend> native) {
  return std::make_unique<NativeJudge>(traits, context, std::move(native));
}

}  // namespace mblast
