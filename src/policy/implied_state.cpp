#include <cstdio>

#include "mblast/policy.hpp"

namespace mblast {

namespace {

// The thresholds of the rule (docs/STATES.md). They match the seed states' where both speak of the
// same number, so that a disagreement means the cheap numbers point elsewhere, not that two
// thresholds differ.
constexpr double kNearRoof = 0.8;        // sol_fraction
constexpr double kBusyForKernels = 0.7;  // profiled kernel time over the measured forward
constexpr double kDramAtRoof = 0.6;      // dram_throughput_fraction
constexpr double kRedundantBytes = 2.0;  // dram_bytes_ratio
constexpr double kCoalesced = 0.6;       // global_load_efficiency
constexpr double kLowOccupancy = 0.25;   // achieved_occupancy
constexpr double kTensorPipeUsed = 0.1;  // tensor_pipe_fraction

std::string format(const char* name, double value) {
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%s = %.3g", name, value);
  return buffer;
}

// Whether every kernel of the forward was profiled: a profile the launch limit cut short has no
// busy time to set against the forward's.
bool profiled_every_kernel(const ProfileSignature& signature) {
  const auto& ncu = signature.to_json().value("ncu", nlohmann::json::object());
  const auto profiled = ncu.value("kernels_profiled", nlohmann::json());
  const auto limit = ncu.value("launch_limit", nlohmann::json());
  return profiled.is_number() && limit.is_number() && profiled.get<double>() < limit.get<double>();
}

ImpliedState memory_child(const ProfileSignature& s, std::string because) {
  const double dram = s.metric("dram_throughput_fraction").value_or(0);
  because += ", " + format("dram_throughput_fraction", dram);
  if (dram >= kDramAtRoof) {
    const auto ratio = s.metric("dram_bytes_ratio");
    if (ratio && *ratio >= kRedundantBytes) {
      return {"memory-bound/redundant-traffic", "memory-bound",
              because + ", " + format("dram_bytes_ratio", *ratio)};
    }
    return {"memory-bound/at-bandwidth", "memory-bound", because};
  }
  const auto efficiency = s.metric("global_load_efficiency");
  if (efficiency && *efficiency < kCoalesced) {
    return {"memory-bound/uncoalesced", "memory-bound",
            because + ", " + format("global_load_efficiency", *efficiency)};
  }
  const auto occupancy = s.metric("achieved_occupancy");
  if (occupancy && *occupancy < kLowOccupancy) {
    return {"memory-bound/low-occupancy", "memory-bound",
            because + ", " + format("achieved_occupancy", *occupancy)};
  }
  return {"memory-bound/below-bandwidth", "memory-bound", because};
}

ImpliedState compute_child(const ProfileSignature& s, std::string because) {
  const auto tensor = s.metric("tensor_pipe_fraction");
  if (tensor && *tensor < kTensorPipeUsed) {
    return {"compute-bound/no-tensor-cores", "compute-bound",
            because + ", " + format("tensor_pipe_fraction", *tensor)};
  }
  const auto occupancy = s.metric("achieved_occupancy");
  if (occupancy && *occupancy < kLowOccupancy) {
    return {"compute-bound/low-occupancy", "compute-bound",
            because + ", " + format("achieved_occupancy", *occupancy)};
  }
  return {"compute-bound", "compute-bound", because};
}

}  // namespace

std::optional<ImpliedState> ncu_implied_state(const ProfileSignature& signature) {
  const auto memory = signature.metric("memory_throughput_fraction");
  const auto sm = signature.metric("sm_throughput_fraction");
  if (signature.ncu_metrics().empty() || !memory || !sm) return std::nullopt;
  const std::string units = format("memory_throughput_fraction", *memory) + " vs " +
                            format("sm_throughput_fraction", *sm);
  const bool memory_side = *memory >= *sm;
  if (const auto sol = signature.metric("sol_fraction"); sol && *sol >= kNearRoof) {
    return ImpliedState{memory_side ? "near-roofline/bandwidth" : "near-roofline/compute",
                        "near-roofline", format("sol_fraction", *sol) + ", " + units};
  }
  const auto busy = signature.metric("ncu_busy_ms");
  const auto total = signature.metric("total_ms");
  if (busy && total && *total > 0 && profiled_every_kernel(signature) &&
      *busy < kBusyForKernels * *total) {
    return ImpliedState{"launch-bound", "launch-bound",
                        format("ncu_busy_ms", *busy) + " of " + format("total_ms", *total)};
  }
  return memory_side ? memory_child(signature, units) : compute_child(signature, units);
}

StateCheck check_state(const std::vector<StateRow>& states, const ProfileSignature& signature) {
  StateCheck check;
  check.cheap = classify(states, signature.profiler_metrics());
  check.cheap_root = root_of(states, check.cheap.state_id);
  check.implied = ncu_implied_state(signature);
  return check;
}

}  // namespace mblast
