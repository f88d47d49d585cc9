#include <cmath>

#include "mblast/error.hpp"
#include "mblast/policy.hpp"

namespace mblast {

double slot_priority(const Slot& slot, int total_visits, const OperatorSelectorConfig& config) {
  const double exploit = slot.time_share * std::pow(config.stall_decay, slot.steps_without_gain);
  const double explore =
      config.exploration * std::sqrt(std::log(total_visits + 1.0) / (slot.visits + 1.0));
  return exploit + explore;
}

std::size_t select_slot(const std::vector<Slot>& slots, const OperatorSelectorConfig& config) {
  if (slots.empty()) throw input_error("no slots to choose from", "profile the problem first");
  int total_visits = 0;
  for (const auto& slot : slots) total_visits += slot.visits;
  std::size_t best = 0;
  double best_priority = slot_priority(slots[0], total_visits, config);
  for (std::size_t i = 1; i < slots.size(); ++i) {
    const double priority = slot_priority(slots[i], total_visits, config);
    if (priority > best_priority) {
      best = i;
      best_priority = priority;
    }
  }
  return best;
}

}  // namespace mblast
