#pragma once
// A profile signature as a judge reports it (docs/ARCHITECTURE.md §3): its numbers (total_ms,
// kernel_count, launch_overhead_fraction, the speed-of-light fractions, ...), which the state
// classifier reads, and its time shares: by op (CUDA: the PyTorch profiler's top-level events),
// by region (the program's top-level calls, where the judge found them) and by kernel (native
// backends), and with `--profile ncu` Nsight Compute's per-kernel counters, aggregated. Read once
// from the judge's JSON; written back exactly as it came, so that what a run directory stores never
// loses a field this build does not know.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast {

struct TimeShare {
  std::string name;
  double share = 0;  // of the profiled time, 0..1
};

class ProfileSignature {
 public:
  ProfileSignature() = default;
  // Lenient: a field of another type is left out of the typed view, and kept in the JSON.
  static ProfileSignature from_json(const nlohmann::json& object);
  // The signature as the judge wrote it (null when there was none).
  const nlohmann::json& to_json() const { return json_; }

  // Every number the classifier may read: the top-level ones and Nsight Compute's.
  const std::map<std::string, double>& metrics() const { return metrics_; }
  // Nsight Compute's numbers ("ncu": {"metrics": {...}}), where `--profile ncu` measured them.
  const std::map<std::string, double>& ncu_metrics() const { return ncu_metrics_; }
  // metrics() without Nsight Compute's: what the PyTorch profiler and the counted work give.
  std::map<std::string, double> profiler_metrics() const;
  std::optional<double> metric(const std::string& name) const;
  const std::vector<TimeShare>& ops() const { return ops_; }
  const std::vector<TimeShare>& regions() const { return regions_; }
  // Whether the judge listed regions at all: an empty list still says that it looked for them.
  bool lists_regions() const { return lists_regions_; }
  const std::vector<TimeShare>& kernels() const { return kernels_; }

 private:
  nlohmann::json json_;
  std::map<std::string, double> metrics_, ncu_metrics_;
  std::vector<TimeShare> ops_, regions_, kernels_;
  bool lists_regions_ = false;
};

}  // namespace mblast
