#include "mblast/kb.hpp"

namespace mblast {
namespace {

std::vector<std::string> strings(const nlohmann::json& object, const char* key) {
  std::vector<std::string> values;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return values;
  for (const auto& value : *it) {
    if (value.is_string()) values.push_back(value.get<std::string>());
  }
  return values;
}

}  // namespace

std::optional<BuiltinSpec> BuiltinSpec::from_json(const nlohmann::json& object) {
  if (!object.is_object()) return std::nullopt;
  BuiltinSpec spec;
  spec.json_ = object;
  if (const auto it = object.find("transform"); it != object.end() && it->is_string()) {
    spec.transform = it->get<std::string>();
  }
  spec.requirements = strings(object, "requires");
  spec.groups = strings(object, "groups");
  spec.needs_ops = strings(object, "needs_ops");
  spec.after = strings(object, "after");
  if (const auto it = object.find("takes_region"); it != object.end() && it->is_boolean()) {
    spec.takes_region = it->get<bool>();
  }
  return spec;
}

}  // namespace mblast
