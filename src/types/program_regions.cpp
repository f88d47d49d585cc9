#include "mblast/program_regions.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "mblast/json_fields.hpp"

namespace mblast {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// name -> op kind (the worker's op_type, lower case) from its "ops" list.
std::map<std::string, std::string> op_kinds_by_name(const nlohmann::json& object) {
  std::map<std::string, std::string> kinds;
  const auto ops = object.find("ops");
  if (ops == object.end() || !ops->is_array()) return kinds;
  for (const auto& op : *ops) {
    std::string name, kind;
    if (op.is_object() && read_lenient(op, "name", name) && read_lenient(op, "op_type", kind)) {
      kinds[name] = lower(kind);
    }
  }
  return kinds;
}

}  // namespace

std::string RegionWindow::slot_id() const {
  std::string id(kRegionSlotPrefix);
  if (ops.empty()) return id;
  return ops.size() == 1 ? id + ops.front() : id + ops.front() + ".." + ops.back();
}

ProgramRegions ProgramRegions::from_json(const nlohmann::json& object) {
  ProgramRegions regions;
  if (!object.is_object()) {
    regions.failure = "the regions worker answered no JSON object";
    return regions;
  }
  read_lenient(object, "captured", regions.captured);
  read_lenient(object, "failure", regions.failure);
  const auto windows = object.find("windows");
  if (!regions.captured || windows == object.end() || !windows->is_array()) return regions;
  const auto kinds = op_kinds_by_name(object);
  for (const auto& w : *windows) {
    if (!w.is_object()) continue;
    RegionWindow window;
    window.ops = read_lenient_strings(w, "ops");
    read_lenient(w, "share", window.share);
    window.inputs = read_lenient_strings(w, "inputs");
    window.outputs = read_lenient_strings(w, "outputs");
    window.op_kinds = read_lenient_strings(w, "op_kinds");
    read_lenient(w, "signature", window.signature);
    read_lenient(w, "key", window.key);
    read_lenient(w, "computation", window.computation);
    window.input_shapes = read_lenient_strings(w, "input_shapes");
    read_lenient(w, "code", window.code);
    if (window.op_kinds.empty()) {
      for (const auto& op : window.ops) {
        if (const auto it = kinds.find(op); it != kinds.end())
          window.op_kinds.push_back(it->second);
      }
    }
    if (!window.ops.empty()) regions.windows.push_back(std::move(window));
  }
  return regions;
}

nlohmann::json ProgramRegions::to_json() const {
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& w : windows) {
    listed.push_back({{"ops", w.ops},
                      {"share", w.share},
                      {"inputs", w.inputs},
                      {"outputs", w.outputs},
                      {"op_kinds", w.op_kinds},
                      {"signature", w.signature},
                      {"key", w.key},
                      {"computation", w.computation},
                      {"input_shapes", w.input_shapes},
                      {"code", w.code}});
  }
  nlohmann::json j = {{"captured", captured}, {"windows", listed}};
  if (!failure.empty()) j["failure"] = failure;
  return j;
}

}  // namespace mblast
