#include "mblast/kb.hpp"

#include "mblast/json_fields.hpp"

namespace mblast {

std::optional<BuiltinSpec> BuiltinSpec::from_json(const nlohmann::json& object) {
  if (!object.is_object()) return std::nullopt;
  BuiltinSpec spec;
  spec.json_ = object;
  if (const auto it = object.find("transform"); it != object.end() && it->is_string()) {
    spec.transform = it->get<std::string>();
  }
  spec.requirements = read_lenient_strings(object, "requires");
  spec.groups = read_lenient_strings(object, "groups");
  spec.needs_ops = read_lenient_strings(object, "needs_ops");
  spec.after = read_lenient_strings(object, "after");
  if (const auto it = object.find("avoid_when"); it != object.end() && it->is_array()) {
    for (const auto& condition : *it) {
      if (condition.is_object() && condition.value("metric", nlohmann::json()).is_string() &&
          condition.value("op", nlohmann::json()).is_string() &&
          condition.value("value", nlohmann::json()).is_number()) {
        spec.avoid_when.push_back(condition);
      }
    }
  }
  if (const auto it = object.find("takes_region"); it != object.end() && it->is_boolean()) {
    spec.takes_region = it->get<bool>();
  }
  if (const auto it = object.find("first"); it != object.end() && it->is_boolean()) {
    spec.first = it->get<bool>();
  }
  return spec;
}

}  // namespace mblast
