#pragma once
// Small readers shared by the report's files: tolerant field access and JSON (Lines) files.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast::report {

std::optional<double> number_or_null(const nlohmann::json& object, const std::string& key);
std::string string_or(const nlohmann::json& object, const std::string& key,
                      const std::string& fallback = {});
std::int64_t integer_or(const nlohmann::json& object, const std::string& key,
                        std::int64_t fallback = 0);

// A JSON file; input_error (exit 2) when it cannot be read or parsed.
nlohmann::json read_json_file(const std::filesystem::path& path);
// JSON Lines; lines that are not JSON objects are skipped and said in `warnings`.
std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& path,
                                            std::vector<std::string>& warnings);

// "1.234x"-style text: 3 significant digits; "-" for none.
std::string speedup_text(const std::optional<double>& speedup);
// "66.7%".
std::string percent_text(double fraction);
// A number with up to `digits` significant digits, no trailing zeros ("1.5", "0.25", "2").
std::string short_number(double value, int digits = 3);

}  // namespace mblast::report
