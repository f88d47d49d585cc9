#pragma once
// What a native backend (OpenCL, RVV) hands the judge after running one candidate on a problem's
// tensor bundles. The judge (native_eval.cpp) compares the outputs with the bundles'
// expected outputs and builds the same result JSON as `mblast eval` on CUDA.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "native/bundle.hpp"

namespace mblast {

struct NativeRunResult {
  // "" when the candidate built and ran on every bundle; else "compile" (the build failed:
  // error holds the compiler's log verbatim), "candidate_runtime" (it ran and reported an
  // error), "timeout" (killed at the timeout), "crash" (killed by a signal).
  std::string error_kind;
  std::string error;
  std::vector<std::vector<Tensor>> outputs;  // per bundle, the produced outputs in order
  // OpenCL: {"median_ms", "p10_ms", "p90_ms", "mean_ms", "runs"} from profiling events.
  // RVV: {"cost": N, "model": "...", "instructions": N, ...}: the deterministic cost.
  nlohmann::json timing = nlohmann::json::object();
  std::string device_name;
  int compute_units = 0;  // OpenCL: of the device the run used (0: not known)
  double build_seconds = 0;
  double run_seconds = 0;
  nlohmann::json details = nlohmann::json::object();  // backend-specific extras for the report
};

// A time (OpenCL: ms) or a deterministic cost (RVV) that speedups are measured against.
struct NativeBaseline {
  // "torch_cpu", "clblast", "naive_opencl", "best_c", "scalar_c_O2", "autovec_c_O3"
  std::string name;
  double value = 0;
  std::string unit;  // "ms" or "cost"
  std::string detail;
  // The profile signature of the kernel run that gave `value` (NativeBackend::signature); empty
  // for a baseline that is no kernel of this backend (PyTorch on the CPU) or whose kernels are a
  // library's (CLBlast), which candidates do not start from.
  nlohmann::json signature = nlohmann::json::object();
};

// A hand-written baseline of `problem` (its naive kernel or plain C twin): <stem><suffix> in
// `folder` (the --baselines option) when given, else beside the problem.
inline std::filesystem::path baseline_file(const std::filesystem::path& problem,
                                           const std::string& folder, const std::string& suffix) {
  const std::filesystem::path dir =
      folder.empty() ? problem.parent_path() : std::filesystem::path(folder);
  return dir / (problem.stem().string() + suffix);
}

// One native target: runs candidates and measures the problem's baselines.
class NativeBackend {
 public:
  virtual ~NativeBackend() = default;
  virtual std::string name() const = 0;  // "opencl" | "rvv"
  virtual NativeRunResult run(const std::filesystem::path& candidate, const BundleSet& bundles) = 0;
  // The profile signature of a run that built and ran (docs/ARCHITECTURE.md §3): the numbers the
  // state classifier reads, from the run's timing or cost and the bundles' recorded work.
  virtual nlohmann::json signature(const NativeRunResult& run, const BundleSet& bundles) = 0;
  // The baselines, primary first; measured once and remembered by the backend object.
  virtual std::vector<NativeBaseline> baselines(const std::filesystem::path& problem,
                                                const BundleSet& bundles) = 0;
  // After baselines(): why each baseline this backend knows is not among them ("rvv: no scalar C
  // twin: ...", a twin that failed verification), one line each.
  virtual std::vector<std::string> missing_baselines() const { return {}; }
  // The hardware id for the KB ("PoCL cpu: <model>", "qemu rv64gcv vlen=256").
  virtual std::string hardware() = 0;
  // The candidate file's extension (".cl", ".c").
  virtual std::string extension() const = 0;
  // One candidate file from the files an agent wrote (file name -> text), e.g. kernels.cl and
  // launch.json for OpenCL. Throws input_error when they do not make a candidate.
  virtual std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) = 0;
  // A built-in technique applied to `candidate` (e.g. a work-group size sweep): the source of
  // the best variant it found. Throws job_error when the transform does not apply.
  virtual std::string builtin_variant(const std::string& transform,
                                      const std::filesystem::path& candidate,
                                      const BundleSet& bundles) = 0;
};

}  // namespace mblast
