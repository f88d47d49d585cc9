#include "opencl/opencl_native_backend.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <optional>

#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "native/native_eval.hpp"
#include "opencl/opencl_backend.hpp"
#include "opencl/opencl_candidate.hpp"
#include "opencl/opencl_ceilings.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_signature.hpp"
#include "opencl/workgroup_sweep.hpp"

namespace mblast::opencl {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read " + path.string(), "check the path");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class OpenClBackend final : public NativeBackend {
 public:
  explicit OpenClBackend(const EvalOptions& options) : options_(options) {
    run_.device = options.device;
    run_.runs = options.timing_runs;
    run_.timeout = options.native_timeout();
    run_.remote = options.target_value("remote");
    run_.remote_mblast = options.target_value("remote_mblast", "mblast");
  }

  std::string name() const override { return "opencl"; }
  std::string extension() const override { return ".cl"; }

  NativeRunResult run(const fs::path& candidate, const BundleSet& bundles) override {
    return run_opencl_candidate(candidate, bundles, run_);
  }

  nlohmann::json signature(const NativeRunResult& run, const BundleSet& bundles) override {
    if (!ceilings_) {
      const fs::path cache = options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir;
      ceilings_.emplace(device_ceilings(run_, cache));
    }
    return opencl_signature(run, ForwardWork::from_meta(bundles.meta), *ceilings_);
  }

  std::vector<NativeBaseline> baselines(const fs::path& problem,
                                        const BundleSet& bundles) override {
    if (baselines_) return *baselines_;
    baselines_.emplace();
    const auto torch = bundles.meta.value("torch_cpu_ms", nlohmann::json::object());
    // On a CPU device, what a user would otherwise run is PyTorch on that same CPU: the headline.
    // The project's naive kernel stays as a secondary column (and leads on other devices, where
    // the host's PyTorch is not the alternative).
    const bool torch_leads = torch.contains("median_ms") && local_cpu_device();
    if (torch_leads) baselines_->push_back(torch_baseline(torch, bundles));
    if (!torch.contains("median_ms")) {
      missing_.push_back("torch_cpu: the bundles hold no PyTorch CPU time (made with --runs 0)");
    }
    // The naive kernel is optional: the project writes one for its own problems; a problem
    // without one (a KernelBench problem) is measured against PyTorch alone.
    const fs::path naive = baseline_file(problem, options_.target_value("baselines"), ".naive.cl");
    if (fs::is_regular_file(naive)) {
      const NativeRunResult result = run_opencl_candidate(naive, bundles, run_);
      const std::string failure = verify(result, bundles);
      if (failure.empty()) {
        baselines_->push_back({"naive_opencl", result.timing.value("median_ms", 0.0), "ms",
                               naive.filename().string() + " on " + result.device_name,
                               signature(result, bundles)});
      } else {
        spdlog::warn("the naive OpenCL baseline {} is not used: {}", naive.string(), failure);
        missing_.push_back("naive_opencl: " + naive.string() + " failed: " + failure);
      }
    } else {
      missing_.push_back("naive_opencl: no naive kernel " + naive.string() +
                         " (optional; write one there, or name its folder with --baselines)");
    }
    if (!torch_leads && torch.contains("median_ms")) {
      baselines_->push_back(torch_baseline(torch, bundles));
    }
    return *baselines_;
  }

  std::vector<std::string> missing_baselines() const override { return missing_; }

  static NativeBaseline torch_baseline(const nlohmann::json& torch, const BundleSet& bundles) {
    return {"torch_cpu", torch["median_ms"].get<double>(), "ms",
            "PyTorch eager on the CPU, " + std::to_string(bundles.meta.value("threads", 0)) +
                " threads"};
  }

  bool local_cpu_device() const {
    if (!run_.remote.empty() && run_.remote != "local") return false;
    try {
      return select_device(options_.device).is_cpu;
    } catch (const std::exception&) {
      return false;
    }
  }

  std::string hardware() override {
    const std::string remote = options_.target_value("remote");
    if (hardware_.empty() && !remote.empty() && remote != "local") {
      hardware_ = remote + (options_.device.empty() ? "" : " device " + options_.device);
    }
    if (hardware_.empty()) {
      const DeviceEntry device = select_device(options_.device);
      hardware_ = device.platform_name + ": " + device.name;
    }
    return hardware_;
  }

  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    std::optional<std::string> kernels, plan;
    for (const auto& [file, text] : files) {
      if (file.ends_with(".cl")) kernels = text;
      if (file.ends_with(".json")) plan = text;
    }
    if (kernels && plan) return combine_candidate_files(*kernels, *plan);
    if (kernels) {
      parse_candidate(*kernels);  // a one-file candidate must carry its plan
      return *kernels;
    }
    throw input_error("an OpenCL candidate needs kernels.cl and launch.json",
                      "write both files, each in its own fenced block");
  }

  std::string builtin_variant(const std::string& transform, const fs::path& candidate,
                              const BundleSet& bundles) override {
    if (transform != "workgroup_size_sweep") {
      throw job_error("the OpenCL backend has no built-in transform '" + transform + "'");
    }
    if (candidate.extension() != ".cl") {
      throw job_error("the work-group size sweep needs an OpenCL candidate, not " +
                      candidate.filename().string());
    }
    SweepOptions sweep;
    sweep.run = run_;
    std::tie(sweep.atol, sweep.rtol) = tolerance(bundles);
    const SweepResult result = sweep_workgroup_sizes(read_text(candidate), bundles, sweep);
    spdlog::debug("work-group size sweep of {}: {}", candidate.string(), result.table().dump());
    if (!result.best) throw job_error("no work-group size gave correct results");
    if (*result.best == 0) {
      throw job_error("no work-group size is faster than the one written: " +
                      result.table().dump());
    }
    return result.variants[*result.best].source;
  }

 private:
  std::pair<double, double> tolerance(const BundleSet& bundles) const {
    const auto policy = native_tolerance(options_, bundles.meta);
    return {policy["atol"].get<double>(), policy["rtol"].get<double>()};
  }

  std::string verify(const NativeRunResult& result, const BundleSet& bundles) const {
    if (!result.error_kind.empty()) return result.error_kind + ": " + result.error;
    const auto [atol, rtol] = tolerance(bundles);
    for (std::size_t i = 0; i < bundles.files.size(); ++i) {
      if (i >= result.outputs.size()) return "no outputs for seed index " + std::to_string(i);
      const Bundle bundle = read_bundle(bundles.files[i]);
      const Comparison c =
          compare_outputs(bundle.with_role(TensorRole::expected), result.outputs[i], atol, rtol);
      if (!c.pass) return c.error;
    }
    return {};
  }

  EvalOptions options_;
  OpenClOptions run_;
  std::optional<std::vector<NativeBaseline>> baselines_;
  // Measured (or read from the cache) at the first signature; nullopt inside when they cannot be.
  std::optional<std::optional<DeviceCeilings>> ceilings_;
  std::vector<std::string> missing_;
  std::string hardware_;
};

}  // namespace

std::unique_ptr<NativeBackend> make_opencl_backend(const EvalOptions& options) {
  return std::make_unique<OpenClBackend>(options);
}

}  // namespace mblast::opencl
