#include "mblast/profile_signature.hpp"

namespace mblast {
namespace {

std::vector<TimeShare> shares(const nlohmann::json& object, const char* key) {
  std::vector<TimeShare> list;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return list;
  for (const auto& entry : *it) {
    if (!entry.is_object()) continue;
    const auto name = entry.find("name");
    if (name == entry.end() || !name->is_string()) continue;
    const auto share = entry.find("share");
    list.push_back({name->get<std::string>(),
                    share != entry.end() && share->is_number() ? share->get<double>() : 0.0});
  }
  return list;
}

}  // namespace

ProfileSignature ProfileSignature::from_json(const nlohmann::json& object) {
  ProfileSignature s;
  s.json_ = object;
  if (!object.is_object()) return s;
  for (const auto& [name, value] : object.items()) {
    if (value.is_number()) s.metrics_[name] = value.get<double>();
  }
  if (const auto ncu = object.find("ncu"); ncu != object.end() && ncu->is_object()) {
    if (const auto m = ncu->find("metrics"); m != ncu->end() && m->is_object()) {
      for (const auto& [name, value] : m->items()) {
        if (value.is_number()) s.ncu_metrics_[name] = value.get<double>();
      }
    }
  }
  s.metrics_.insert(s.ncu_metrics_.begin(), s.ncu_metrics_.end());
  s.ops_ = shares(object, "ops");
  s.regions_ = shares(object, "regions");
  s.lists_regions_ = object.contains("regions");
  s.kernels_ = shares(object, "kernels");
  return s;
}

std::map<std::string, double> ProfileSignature::profiler_metrics() const {
  std::map<std::string, double> result = metrics_;
  for (const auto& [name, _] : ncu_metrics_) result.erase(name);
  return result;
}

std::optional<double> ProfileSignature::metric(const std::string& name) const {
  const auto it = metrics_.find(name);
  if (it == metrics_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mblast
