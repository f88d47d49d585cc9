#include <algorithm>
#include <cmath>
#include <numeric>

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
  return slots_by_priority(slots, config).front();
}

std::vector<std::size_t> slots_by_priority(const std::vector<Slot>& slots,
                                           const OperatorSelectorConfig& config) {
  int total_visits = 0;
  for (const auto& slot : slots) total_visits += slot.visits;
  std::vector<double> priority;
  for (const auto& slot : slots) priority.push_back(slot_priority(slot, total_visits, config));
  std::vector<std::size_t> order(slots.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return priority[a] > priority[b]; });
  return order;
}

}  // namespace mblast
