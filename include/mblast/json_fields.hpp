#pragma once
// Reading the fields of a JSON object written by mblast itself (config.json, the eval server's
// messages): a missing or null field leaves the default in place, so that older files still read.
#include <optional>

#include <nlohmann/json.hpp>

namespace mblast {

template <typename T>
void read_field(const nlohmann::json& json, const char* key, T& out) {
  if (json.contains(key) && !json[key].is_null()) out = json[key].get<T>();
}

// A field that may be absent (keeps `out`), null (clears it) or set.
template <typename T>
void read_optional_field(const nlohmann::json& json, const char* key, std::optional<T>& out) {
  if (!json.contains(key)) return;
  if (json[key].is_null()) {
    out.reset();
  } else {
    out = json[key].get<T>();
  }
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace mblast
