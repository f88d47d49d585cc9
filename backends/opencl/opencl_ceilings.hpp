#pragma once
// The OpenCL device's ceilings, the speed of light that candidates' signatures are set against:
// its copy bandwidth and its fp32 multiply-add rate, measured with two small kernels of our own
// (kCeilingKernels in opencl_ceilings.cpp) and cached per machine and device, as the CUDA
// backend caches its own.
//
// - Bandwidth: a float4 copy, bytes read plus bytes written over the kernel's event time, at
//   buffer sizes from 64 KiB to 64 MiB; the ceiling is the best size's figure. On a CPU device
//   the native problems (tens to hundreds of KiB) stay in cache, so DRAM bandwidth alone would
//   be no ceiling for them.
// - FLOP rate: every work-item runs 10 independent float8 multiply-add chains (mad, 2 FLOPs per
//   lane), 1024 work-items per compute unit; FLOPs over the kernel's event time.
// Each figure is the fastest of 7 timed launches after a warm-up.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "opencl/opencl_backend.hpp"

namespace mblast::opencl {

struct DeviceCeilings {
  double bandwidth_gbs = 0;  // GB/s, bytes read plus written
  double gflops = 0;         // fp32 GFLOP/s
  nlohmann::json detail;     // every measured figure, the device and when

  static std::optional<DeviceCeilings> from_json(const nlohmann::json& json);
  nlohmann::json to_json() const;
};

// Measures the ceilings of the device `spec` names (select_device) in this process. Throws
// job_error when the device cannot run the two kernels.
DeviceCeilings measure_ceilings(const std::string& device_spec);

// The ceilings of the device the options name: from cache_dir/ceilings/ when measured before,
// else measured in a child (`mblast internal opencl-ceilings`, on the --remote target where one
// is set) and cached. nullopt, with a warning, when they cannot be measured: signatures then
// carry no speed-of-light fractions.
std::optional<DeviceCeilings> device_ceilings(const OpenClOptions& options,
                                              const std::filesystem::path& cache_dir);

// The body of `mblast internal opencl-ceilings --device SPEC`: prints the measured ceilings as
// one JSON object (or {"setup_error", "hint", "exit_code"}); returns the exit code.
int run_ceilings_child(const std::string& device_spec);

}  // namespace mblast::opencl
