#include "opencl/opencl_native_backend.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <optional>

#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "native/native_eval.hpp"
#include "opencl/clblast_gemm.hpp"
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
    auto torch = torch_baseline(bundles);
    auto library = clblast_baseline(bundles);
    auto naive = naive_baseline(problem, bundles);
    baselines_ = order_opencl_baselines(std::move(torch), std::move(library), std::move(naive),
                                        local_cpu_device());
    return *baselines_;
  }

  std::vector<std::string> missing_baselines() const override { return missing_; }

  std::optional<NativeBaseline> torch_baseline(const BundleSet& bundles) {
    const auto torch = bundles.meta.value("torch_cpu_ms", nlohmann::json::object());
    if (!torch.contains("median_ms")) {
      missing_.push_back("torch_cpu: the bundles hold no PyTorch CPU time (made with --runs 0)");
      return std::nullopt;
    }
    const std::string version = bundles.meta.value("torch_version", std::string());
    return NativeBaseline{"torch_cpu", torch["median_ms"].get<double>(), "ms",
                          "PyTorch" + (version.empty() ? "" : " " + version) +
                              " eager on the CPU, " +
                              std::to_string(bundles.meta.value("threads", 0)) + " threads"};
  }

  // The tuned library, for a problem whose forward is one GEMM of its bundle's tensors: CLBlast
  // on the candidates' device, verified like a candidate.
  std::optional<NativeBaseline> clblast_baseline(const BundleSet& bundles) {
    std::optional<GemmSpec> spec;
    try {
      spec = GemmSpec::from_meta(bundles.meta);
    } catch (const Error& e) {
      missing_.push_back(std::string("clblast: ") + e.what());
      return std::nullopt;
    }
    if (!spec) {
      missing_.push_back("clblast: not a GEMM: " +
                         bundles.meta.value("gemm_reason", std::string("the bundles record no "
                                                                       "GEMM shape")));
      return std::nullopt;
    }
    const std::string what = clblast_version() + " " + spec->describe();
    const NativeRunResult result = run_opencl_gemm(*spec, bundles, run_);
    std::string failure = verify(result, bundles);
    const double ms = result.timing.value("median_ms", 0.0);
    if (failure.empty() && !(ms > 0)) failure = "no time measured (timing runs: 0)";
    if (!failure.empty()) {
      spdlog::warn("the CLBlast baseline ({}) is not used: {}", what, failure);
      missing_.push_back("clblast: " + what + " failed: " + failure);
      return std::nullopt;
    }
    return NativeBaseline{"clblast", ms, "ms",
                          what + " on " + result.device_name + ", " +
                              std::to_string(result.compute_units) + " compute units"};
  }

  // The project's naive kernel is optional: the project writes one for its own problems; a
  // problem without one (a KernelBench problem) is measured against the others.
  std::optional<NativeBaseline> naive_baseline(const fs::path& problem, const BundleSet& bundles) {
    const fs::path naive = baseline_file(problem, options_.target_value("baselines"), ".naive.cl");
    if (!fs::is_regular_file(naive)) {
      missing_.push_back("naive_opencl: no naive kernel " + naive.string() +
                         " (optional; write one there, or name its folder with --baselines)");
      return std::nullopt;
    }
    const NativeRunResult result = run_opencl_candidate(naive, bundles, run_);
    if (const std::string failure = verify(result, bundles); !failure.empty()) {
      spdlog::warn("the naive OpenCL baseline {} is not used: {}", naive.string(), failure);
      missing_.push_back("naive_opencl: " + naive.string() + " failed: " + failure);
      return std::nullopt;
    }
    return NativeBaseline{"naive_opencl", result.timing.value("median_ms", 0.0), "ms",
                          naive.filename().string() + " on " + result.device_name,
                          signature(result, bundles)};
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
    return {policy.atol, policy.rtol};
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

std::vector<NativeBaseline> order_opencl_baselines(std::optional<NativeBaseline> torch,
                                                   std::optional<NativeBaseline> library,
                                                   std::optional<NativeBaseline> naive,
                                                   bool cpu_device) {
  std::vector<NativeBaseline> ordered;
  const auto add = [&](std::optional<NativeBaseline>& b) {
    if (b) ordered.push_back(std::move(*b));
  };
  if (cpu_device) {
    if (torch && library && library->value < torch->value) std::swap(torch, library);
    add(torch);
    add(library);
    add(naive);
  } else {
    add(library);
    add(naive);
    add(torch);
  }
  return ordered;
}

std::unique_ptr<NativeBackend> make_opencl_backend(const EvalOptions& options) {
  return std::make_unique<OpenClBackend>(options);
}

}  // namespace mblast::opencl
