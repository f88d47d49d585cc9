#pragma once
// Migrations and the seed catalogue, both compiled in from kb_schema/.
#include <string_view>
#include <vector>

#include "kb/sqlite.hpp"

namespace mblast::kb {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// Sorted by version; versions are 1, 2, ... without gaps (checked).
const std::vector<Migration>& migrations();

// Inserts or refreshes the seed states and techniques. Cheap when the seed has not changed.
void apply_seed(sql::Db& db);

// Tables that travel in export/import/merge, parents before children.
struct TableInfo {
  std::string_view name;
  std::string_view order_by;
};
const std::vector<TableInfo>& transferable_tables();

}  // namespace mblast::kb
