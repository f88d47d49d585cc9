#include "report/json_util.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "mblast/error.hpp"

namespace mblast::report {

namespace fs = std::filesystem;

std::optional<double> number_or_null(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string string_or(const nlohmann::json& object, const std::string& key,
                      const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::int64_t integer_or(const nlohmann::json& object, const std::string& key,
                        std::int64_t fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  return it->is_number_integer() ? it->get<std::int64_t>()
                                 : static_cast<std::int64_t>(it->get<double>());
}

nlohmann::json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw input_error("cannot read " + path.string(), "check the path and its permissions");
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw input_error(path.string() + " is not valid JSON: " + e.what(),
                      "restore the file, or remove it so the report skips it");
  }
}

std::vector<nlohmann::json> read_json_lines(const fs::path& path,
                                            std::vector<std::string>& warnings) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  if (!in) {
    warnings.push_back("cannot read " + path.string());
    return rows;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object()) {
      warnings.push_back(path.string() + ":" + std::to_string(number) +
                         " is not a JSON object; skipped");
      continue;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string short_number(double value, int digits) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

std::string speedup_text(const std::optional<double>& speedup) {
  if (!speedup) return "-";
  char buffer[48];
  if (*speedup >= 100) {
    std::snprintf(buffer, sizeof buffer, "%.0fx", *speedup);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3gx", *speedup);
  }
  return buffer;
}

std::string percent_text(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

}  // namespace mblast::report
