#pragma once
// A problem's Model as the model-level optimizer sees it (worker/mblast_regions): whether torch.fx
// captured it, and its region windows, runs of consecutive ops with their measured time share.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast {

// A region's slot id starts with this; the whole model's is "model".
inline constexpr std::string_view kRegionSlotPrefix = "region:";
inline bool is_region_slot(std::string_view slot_id) {
  return slot_id.starts_with(kRegionSlotPrefix);
}

struct RegionWindow {
  std::vector<std::string> ops;  // torch.fx node names, consecutive in the forward
  double share = 0;              // of the model's measured time, 0..1
  std::vector<std::string> inputs, outputs;
  // Its ops' kinds, lower case ("conv2d", "relu"): what a built-in's needs_ops looks for.
  std::vector<std::string> op_kinds;
  // What identifies it beyond this model (worker/mblast_regions/identity.py owns the rules):
  // "kinds|shape class", the key of its reward statistics; a hash equal only where the same
  // computation appears again; each input's "dtype[shape]". Empty from older runs' configs.
  std::string signature, key;
  std::string computation;  // the key without the values' shapes: equal at other sizes
  std::vector<std::string> input_shapes;
  // The window as Python an agent reads: the submodules it calls, then torch.fx's forward for it.
  std::string code;

  // "region:conv1..relu2" (or "region:conv1" for one op): the slot a step works on.
  std::string slot_id() const;
};

struct ProgramRegions {
  bool captured = false;
  std::string failure;                // why the model is no graph (then the run keeps it whole)
  std::vector<RegionWindow> windows;  // largest share first

  // The regions worker's JSON (and to_json's); a window without ops is left out.
  static ProgramRegions from_json(const nlohmann::json& object);
  nlohmann::json to_json() const;
};

}  // namespace mblast
