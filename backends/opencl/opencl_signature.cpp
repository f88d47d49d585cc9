#include "opencl/opencl_signature.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace mblast::opencl {

namespace {

struct KernelTime {
  double ms = 0;
  int count = 0;
};

// Kernel name -> time per forward and launches per forward.
std::map<std::string, KernelTime> kernel_times(const nlohmann::json& launches) {
  std::map<std::string, KernelTime> times;
  for (const auto& launch : launches) {
    KernelTime& t = times[launch.value("kernel", std::string("?"))];
    t.ms += launch.value("median_ms", 0.0);
    t.count += 1;
  }
  return times;
}

nlohmann::json shares(const std::map<std::string, KernelTime>& times, double busy_ms) {
  std::vector<std::pair<std::string, KernelTime>> rows(times.begin(), times.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, t] : rows) {
    list.push_back({{"name", name},
                    {"ms", t.ms},
                    {"share", busy_ms > 0 ? t.ms / busy_ms : 0.0},
                    {"count", t.count}});
  }
  return list;
}

}  // namespace

nlohmann::json opencl_signature(const NativeRunResult& run, const ForwardWork& work,
                                const std::optional<DeviceCeilings>& ceilings) {
  nlohmann::json signature = nlohmann::json::object();
  const double total_ms = run.timing.value("median_ms", 0.0);
  const auto launches = run.details.value("launches", nlohmann::json::array());
  if (total_ms <= 0 || !launches.is_array() || launches.empty()) return signature;
  const auto times = kernel_times(launches);
  double busy_ms = 0;
  for (const auto& [name, t] : times) busy_ms += t.ms;
  const auto count = static_cast<double>(launches.size());
  signature["total_ms"] = total_ms;
  signature["kernel_count"] = count;
  signature["mean_kernel_us"] = busy_ms / count * 1000.0;
  signature["launch_overhead_fraction"] = std::max(0.0, 1.0 - busy_ms / total_ms);
  signature["kernels"] = shares(times, busy_ms);
  std::optional<PeakRates> peak;
  if (ceilings) {
    // GB/s and GFLOP/s are 1e6 bytes and FLOPs per millisecond.
    peak = PeakRates{ceilings->bandwidth_gbs * 1e6, ceilings->gflops * 1e6};
    signature["device_bandwidth_gbs"] = ceilings->bandwidth_gbs;
    signature["device_gflops"] = ceilings->gflops;
    if (work.min_bytes) signature["achieved_gbs"] = *work.min_bytes / total_ms / 1e6;
    if (work.flops) signature["achieved_gflops"] = *work.flops / total_ms / 1e6;
  }
  add_speed_of_light(signature, work, peak, total_ms);
  return signature;
}

}  // namespace mblast::opencl
