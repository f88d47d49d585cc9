// `mblast doctor`'s checks for the CUDA backend: nvcc and an NVIDIA GPU.
#include "cuda/cuda_doctor.hpp"

#include <algorithm>

#include "mblast/probe.hpp"

namespace mblast {
namespace {

using namespace probing;
namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr const char* kNvcc = "nvcc";
constexpr const char* kGpu = "nvidia-gpu";

DoctorCheck check_nvcc() {
  DoctorCheck check = make_check(kNvcc, false);
  const auto nvcc = find_tool("nvcc", "/usr/local/cuda/bin");
  const std::string fix =
      "install the CUDA toolkit and put its bin/ on PATH (only the cuda backend needs it)";
  if (!nvcc) return fail(check, "nvcc not found on PATH or in /usr/local/cuda/bin", fix);
  const ProcessResult result = probe({nvcc->string(), "--version"});
  const std::string version = word_after(result.out, "release ");
  if (!result.ok() || version.empty()) {
    return fail(check, nvcc->string() + " --version failed: " + failure_text(result), fix);
  }
  return pass(check, "CUDA " + version + " (" + nvcc->string() + ")");
}

DoctorCheck check_gpu() {
  DoctorCheck check = make_check(kGpu, false);
  const std::string fix =
      "run on a machine with an NVIDIA GPU and its driver (nvidia-smi); the opencl and rvv "
      "backends need no GPU";
  const auto smi = find_tool("nvidia-smi", "/usr/bin");
  if (!smi) return fail(check, "no NVIDIA GPU found: nvidia-smi is not installed", fix);
  const ProcessResult result = probe(
      {smi->string(), "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"});
  const std::vector<std::string> gpus = lines_of(result.out);
  if (!result.ok() || gpus.empty()) {
    return fail(check, "no NVIDIA GPU found: nvidia-smi: " + failure_text(result), fix);
  }
  std::vector<std::string> described;
  for (const std::string& gpu : gpus) {
    const std::size_t comma = gpu.find(',');
    described.push_back(comma == std::string::npos
                            ? gpu
                            : gpu.substr(0, comma) + " (driver" + gpu.substr(comma + 1) + ")");
  }
  if (std::all_of(described.begin(), described.end(),
                  [&](const std::string& d) { return d == described.front(); })) {
    return pass(check, std::to_string(described.size()) + " x " + described.front());
  }
  std::string detail;
  for (const std::string& d : described) detail += (detail.empty() ? "" : "; ") + d;
  return pass(check, detail);
}

}  // namespace

std::vector<std::string> cuda_doctor_names() { return {kNvcc, kGpu}; }

std::vector<DoctorCheck> cuda_doctor(const std::function<bool(const std::string&)>& wanted) {
  std::vector<DoctorCheck> checks;
  if (wanted(kNvcc)) checks.push_back(check_nvcc());
  if (wanted(kGpu)) checks.push_back(check_gpu());
  return checks;
}

}  // namespace mblast
