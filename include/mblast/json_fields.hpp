#pragma once
// Reading the fields of a JSON object written by mblast itself (config.json, the eval server's
// messages): a missing or null field leaves the default in place, so that older files still read.
// read_lenient also skips a field of another kind (steps.jsonl of an older mblast, the worker's
// answers).
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

// True when `key` held a value of T's kind (boolean, number or string), which is then in `out`;
// a missing field or one of another kind leaves `out` as it was.
template <typename T>
bool read_lenient(const nlohmann::json& json, const char* key, T& out) {
  const auto it = json.find(key);
  if (it == json.end()) return false;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return false;
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (!it->is_number()) return false;
  } else {
    if (!it->is_string()) return false;
  }
  out = it->template get<T>();
  return true;
}

template <typename T>
void read_lenient(const nlohmann::json& json, const char* key, std::optional<T>& out) {
  T value{};
  if (read_lenient(json, key, value)) out = std::move(value);
}

// The strings of the array in `key`, leniently: a missing field or one that is not an array reads
// as empty, and an entry that is not a string is skipped.
inline std::vector<std::string> read_lenient_strings(const nlohmann::json& json, const char* key) {
  std::vector<std::string> values;
  const auto it = json.find(key);
  if (it == json.end() || !it->is_array()) return values;
  for (const auto& value : *it) {
    if (value.is_string()) values.push_back(value.get<std::string>());
  }
  return values;
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace mblast
