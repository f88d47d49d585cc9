#pragma once
// Aligned plain-text tables for people. Scripts use --json instead.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast::cli {

struct Column {
  std::string key;             // JSON field of each row
  std::string header;          // printed title
  std::size_t max_width = 40;  // longer cells are cut with "…"
};

// A JSON value as a short cell: null as "-", numbers with 4 significant digits, arrays joined.
std::string cell_text(const nlohmann::json& value);

// Rows are JSON objects; the table has one line per row, columns separated by two spaces.
std::string format_table(const nlohmann::json& rows, const std::vector<Column>& columns);

}  // namespace mblast::cli
