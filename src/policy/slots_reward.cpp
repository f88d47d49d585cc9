#include <algorithm>
#include <cmath>

#include "mblast/policy.hpp"

namespace mblast {

std::vector<Slot> slots_from_signature(const nlohmann::json& signature, bool per_op_slots,
                                       const SlotConfig& config) {
  std::vector<Slot> ops;
  const char* list = signature.is_object() && signature.contains("regions") ? "regions" : "ops";
  if (per_op_slots && signature.is_object() && signature.contains(list) &&
      signature[list].is_array()) {
    for (const auto& op : signature[list]) {
      const double share = op.value("share", 0.0);
      if (op.value("name", "").empty() || share < config.min_share) continue;
      ops.push_back({op["name"].get<std::string>(), share, 0, 0});
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

Signature signature_from_json(const nlohmann::json& signature) {
  Signature numbers;
  if (!signature.is_object()) return numbers;
  for (const auto& [name, value] : signature.items()) {
    if (value.is_number()) numbers[name] = value.get<double>();
  }
  return numbers;
}

}  // namespace mblast
