#pragma once
// The profile signature of one OpenCL run (docs/ARCHITECTURE.md §3): the per-launch event times of
// one forward pass as kernel time shares and launch gaps, and the forward's achieved fraction of
// the device's measured bandwidth and FLOP rate.
#include <optional>

#include <nlohmann/json.hpp>

#include "native/native_backend.hpp"
#include "mblast/speed_of_light.hpp"
#include "opencl/opencl_ceilings.hpp"

namespace mblast::opencl {

// From run.timing ("median_ms": first launch's start to last launch's end) and
// run.details["launches"] (each with its "kernel" and "median_ms"):
//   total_ms, kernel_count (launches per forward), mean_kernel_us, launch_overhead_fraction
//   (the forward's time outside any launch), kernels ([{name, ms, share, count}], share of the
//   time in launches, largest first), and with the ceilings device_bandwidth_gbs,
//   device_gflops, achieved_gbs (min_bytes over total_ms), achieved_gflops and the
//   speed-of-light fractions of add_speed_of_light. Empty for a run without timing.
nlohmann::json opencl_signature(const NativeRunResult& run, const ForwardWork& work,
                                const std::optional<DeviceCeilings>& ceilings);

}  // namespace mblast::opencl
