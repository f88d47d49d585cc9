#include <algorithm>
#include <cmath>

#include "mblast/policy.hpp"

namespace mblast {

std::vector<Slot> slots_from_signature(const ProfileSignature& signature, bool per_op_slots,
                                       const SlotConfig& config) {
  std::vector<Slot> ops;
  // Regions (the program's top-level calls) where the judge found them, else the profiler's ops.
  if (per_op_slots) {
    for (const auto& op : signature.lists_regions() ? signature.regions() : signature.ops()) {
      if (op.name.empty() || op.share < config.min_share) continue;
      ops.push_back({op.name, op.share, 0, 0});
    }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const Slot& a, const Slot& b) { return a.time_share > b.time_share; });
    if (ops.size() > config.max_op_slots) ops.resize(config.max_op_slots);
  }
  if (ops.size() < 2) return {{"model", 1.0, 0, 0}};
  std::vector<Slot> slots = {
      {"model", std::max(config.model_floor, 1.0 - ops.front().time_share), 0, 0}};
  slots.insert(slots.end(), ops.begin(), ops.end());
  return slots;
}

double step_reward(bool correct, std::optional<double> speedup, double best_before,
                   double failure_reward) {
  if (!correct || !speedup || *speedup <= 0 || best_before <= 0) return failure_reward;
  return std::log(*speedup / best_before);
}

double region_reward(bool correct, std::optional<double> speedup, double base_speedup, double share,
                     double failure_reward, double max_region_speedup) {
  const double whole = step_reward(correct, speedup, base_speedup, failure_reward);
  if (!correct || !speedup || *speedup <= 0 || base_speedup <= 0 || share <= 0 || share > 1)
    return whole;
  const double time_after = base_speedup / *speedup;  // of the base's time
  const double region_after = share - (1.0 - time_after);
  if (region_after <= share / max_region_speedup) return std::log(max_region_speedup);
  return std::log(std::max(share / region_after, 1.0 / max_region_speedup));
}

}  // namespace mblast
