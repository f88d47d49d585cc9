#include "cli/table.hpp"

#include <algorithm>
#include <cstdio>

namespace mblast::cli {

namespace {

// Width in terminal columns, counting each UTF-8 code point once.
std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string truncate(const std::string& text, std::size_t width) {
  if (display_width(text) <= width) return text;
  std::string out;
  std::size_t seen = 0;
  for (char c : text) {
    bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point && ++seen > width - 1) break;
    out.push_back(c);
  }
  return out + "\u2026";
}

}  // namespace

std::string cell_text(const nlohmann::json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
  }
  if (value.is_number_float()) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value.get<double>());
    return buffer;
  }
  if (value.is_array()) {
    std::string text;
    for (const auto& item : value) text += (text.empty() ? "" : ",") + cell_text(item);
    return text;
  }
  return value.dump();
}

std::string format_table(const nlohmann::json& rows, const std::vector<Column>& columns) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> widths;
  for (const auto& column : columns) widths.push_back(display_width(column.header));
  for (const auto& row : rows) {
    std::vector<std::string> line;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      auto value = row.contains(columns[i].key) ? row.at(columns[i].key) : nlohmann::json();
      line.push_back(truncate(cell_text(value), columns[i].max_width));
      widths[i] = std::max(widths[i], display_width(line.back()));
    }
    cells.push_back(std::move(line));
  }
  auto emit = [&](std::string& out, const std::vector<std::string>& line) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(widths[i] - display_width(line[i]) + 2, ' ');
    }
    out += text + "\n";
  };
  std::string out;
  std::vector<std::string> header;
  for (const auto& column : columns) header.push_back(column.header);
  emit(out, header);
  for (const auto& line : cells) emit(out, line);
  return out;
}

}  // namespace mblast::cli
