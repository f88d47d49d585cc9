#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "mblast/policy.hpp"

namespace mblast {

namespace {

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// The assumed mean reward the seed catalogue gives a technique in a state: ranked by the state's
// try_first list, else a flat small prior when the technique lists the state; else none.
std::optional<double> seed_prior_reward(const TechniqueRow& t, const std::string& state_id,
                                        const SelectorConfig& config) {
  const auto& ranked = config.try_first;
  const auto at = std::find(ranked.begin(), ranked.end(), t.id);
  if (at != ranked.end()) {
    const auto size = static_cast<double>(ranked.size());
    const auto rank = static_cast<double>(at - ranked.begin());
    return config.seed_prior_reward + config.try_first_reward * (size - rank) / size;
  }
  if (contains(t.states, state_id)) return config.seed_prior_reward;
  return std::nullopt;
}

}  // namespace

std::string technique_unavailable(const TechniqueRow& t, const std::string& backend,
                                  const SelectorConfig& config) {
  if (!contains(t.backends, backend)) return "not for " + backend;
  if (t.deprecated) return "deprecated";
  if (t.implementer == "llm" && !config.llm_available) return "needs an LLM";
  if (t.implementer == "builtin" && t.builtin) {
    for (const auto& requirement : t.builtin->requirements) {
      if (!contains(config.allowed_requirements, requirement)) return "needs " + requirement;
    }
  }
  return {};
}

Selection select_technique(const std::vector<TechniqueRow>& techniques,
                           const std::vector<RewardStat>& stats, const std::string& state_id,
                           const std::string& backend, const std::string& hardware,
                           const SelectorConfig& config, std::uint64_t seed) {
  Selection selection;
  double total_pulls = 0;
  for (const auto& t : techniques) {
    if (!contains(t.backends, backend)) continue;
    ArmScore arm;
    arm.technique_id = t.id;
    arm.removed_reason = technique_unavailable(t, backend, config);
    arm.removed = !arm.removed_reason.empty();

    double sum = 0;
    double local_failures = 0;
    bool local_success = false;
    for (const auto& s : stats) {
      if (s.technique_id != t.id || s.state_id != state_id || s.backend != backend) continue;
      const double n = static_cast<double>(s.n);
      if (s.hardware == hardware) {
        arm.n_local += n;
        sum += s.sum_reward;
        // Every attempt of an arm whose best reward is the failure reward failed.
        if (s.best_reward <= config.failure_reward) {
          local_failures += n;
        } else {
          local_success = true;
        }
      } else {
        arm.n_prior += config.other_hardware_weight * n;
        sum += config.other_hardware_weight * s.sum_reward;
      }
    }
    if (const auto prior = seed_prior_reward(t, state_id, config)) {
      arm.n_prior += config.seed_prior_count;
      sum += config.seed_prior_count * *prior;
    }
    // An arm nothing is known of is assumed to change nothing, with the seed prior's weight: its
    // bonus is large but finite, so a later task exploits what paid off in the same state.
    if (arm.n_local + arm.n_prior == 0) arm.n_prior = config.seed_prior_count;
    if (!arm.removed && !local_success &&
        local_failures >= static_cast<double>(config.constraint_min_failures)) {
      arm.removed = true;
      arm.removed_reason = "failed " + std::to_string(static_cast<int>(local_failures)) +
                           " times in " + state_id + " on this hardware";
    }
    const double n = arm.n_local + arm.n_prior;
    arm.mean = n > 0 ? sum / n : 0.0;
    total_pulls += n;
    selection.arms.push_back(std::move(arm));
  }

  // A seeded shuffle first, so that ties (arms nothing is known of above all) are broken
  // reproducibly but not always in alphabetical order.
  std::mt19937_64 rng(seed);
  std::shuffle(selection.arms.begin(), selection.arms.end(), rng);
  for (auto& arm : selection.arms) {
    const double n = arm.n_local + arm.n_prior;
    arm.bonus = config.exploration * std::sqrt(std::log(total_pulls + 1) / n);
    arm.score = arm.removed ? -std::numeric_limits<double>::infinity() : arm.mean + arm.bonus;
  }
  std::stable_sort(selection.arms.begin(), selection.arms.end(),
                   [](const ArmScore& a, const ArmScore& b) { return a.score > b.score; });
  if (!selection.arms.empty() && !selection.arms.front().removed) {
    selection.technique_id = selection.arms.front().technique_id;
  }
  return selection;
}

}  // namespace mblast
