#include "mblast/run_events.hpp"

#include <fmt/ranges.h>

#include "mblast/json_fields.hpp"

namespace mblast {

nlohmann::json RunStart::to_json() const {
  return {{"task", task},
          {"run_dir", run_dir},
          {"kb", kb},
          {"backend", backend},
          {"device", device},
          {"llm", llm},
          {"builtin_only", builtin_only},
          {"resumed_steps", resumed_steps}};
}

std::string RunBaseline::slot_list() const { return fmt::format("{}", fmt::join(slots, ", ")); }

nlohmann::json RunBaseline::to_json() const {
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& b : baselines) figures.push_back(b.to_json());
  return {{"ref_ms", optional_json(ref_ms)},
          {"ref_cost", optional_json(ref_cost)},
          {"baselines", figures},
          {"hardware", hardware},
          {"slots", slot_list()}};
}

}  // namespace mblast
