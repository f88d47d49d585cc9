// Export, import and merge. Rows are keyed by slug or content hash, so every operation here is
// idempotent: importing or merging the same data twice adds nothing.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <istream>
#include <map>
#include <ostream>

#include "kb/schema.hpp"
#include "kb/sqlite.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"

namespace mblast {

namespace {

std::vector<std::string> table_columns(sql::Db& db, std::string_view table,
                                       const std::string& schema = "main") {
  auto stmt = db.prepare("SELECT name FROM pragma_table_info(?1, ?2)");
  stmt.bind(1, std::string(table)).bind(2, schema);
  std::vector<std::string> columns;
  while (stmt.step()) columns.push_back(stmt.get_text(0));
  return columns;
}

// Columns a row must carry: NOT NULL without a default (SQLite would otherwise answer with its
// own constraint text).
std::vector<std::string> required_columns(sql::Db& db, std::string_view table) {
  auto stmt = db.prepare(
      "SELECT name FROM pragma_table_info(?1) WHERE \"notnull\" = 1 AND dflt_value IS NULL");
  stmt.bind(1, std::string(table));
  std::vector<std::string> columns;
  while (stmt.step()) columns.push_back(stmt.get_text(0));
  return columns;
}

// Derived columns are recomputed by triggers from the rows they derive from.
bool is_derived(std::string_view table, const std::string& column) {
  return table == "claims" && (column == "support" || column == "refute");
}

std::string join(const std::vector<std::string>& items, const std::string& prefix = {}) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + prefix + item;
  return text;
}

}  // namespace

void KnowledgeBase::export_jsonl(std::ostream& out) const {
  for (const auto& table : kb::transferable_tables()) {
    auto stmt = db_->prepare("SELECT * FROM " + std::string(table.name) + " ORDER BY " +
                             std::string(table.order_by));
    while (stmt.step()) {
      out << nlohmann::json{{"table", table.name}, {"row", stmt.row_json()}}.dump() << '\n';
    }
  }
  out.flush();
  if (!out) throw job_error("writing the export failed", "check free disk space");
}

ImportResult KnowledgeBase::import_jsonl(std::istream& in) {
  struct Insert {
    std::vector<std::string> columns;
    std::vector<std::string> required;
    std::unique_ptr<sql::Stmt> stmt;
  };
  std::map<std::string, Insert> inserts;
  for (const auto& table : kb::transferable_tables()) {
    Insert insert;
    insert.columns = table_columns(*db_, table.name);
    insert.required = required_columns(*db_, table.name);
    std::vector<std::string> placeholders(insert.columns.size(), "?");
    insert.stmt = std::make_unique<sql::Stmt>(
        *db_, "INSERT INTO " + std::string(table.name) + " (" + join(insert.columns) +
                  ") VALUES (" + join(placeholders) + ") ON CONFLICT DO NOTHING");
    inserts.emplace(std::string(table.name), std::move(insert));
  }

  ImportResult result;
  transaction([&] {
    db_->exec("PRAGMA defer_foreign_keys = ON");
    std::string line;
    std::int64_t line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto where = "line " + std::to_string(line_number) + " of the import";
      nlohmann::json record;
      try {
        record = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error& e) {
        throw input_error(where + " is not JSON: " + e.what(),
                          "import files are written by `mblast kb export` (JSON Lines)");
      }
      if (!record.is_object() || !record.contains("table") || !record["table"].is_string() ||
          !record.contains("row") || !record["row"].is_object()) {
        throw input_error(where + " is not a {\"table\": ..., \"row\": {...}} record");
      }
      auto found = inserts.find(record["table"].get<std::string>());
      if (found == inserts.end()) {
        throw input_error(where + " names an unknown table '" + record["table"].get<std::string>() +
                          "'");
      }
      const auto& row = record["row"];
      auto& [table, insert] = *found;
      for (const auto& column : insert.required) {
        if (is_derived(table, column)) continue;
        if (auto value = row.find(column); value == row.end() || value->is_null()) {
          throw input_error(where + ": the " + table + " row has no '" + column +
                                "', which every " + table + " row needs",
                            "import files are written by `mblast kb export`; add the field or "
                            "export the rows again");
        }
      }
      for (std::size_t i = 0; i < insert.columns.size(); ++i) {
        const auto& column = insert.columns[i];
        int index = static_cast<int>(i) + 1;
        if (is_derived(table, column)) {
          insert.stmt->bind(index, std::int64_t{0});
        } else if (auto value = row.find(column); value != row.end()) {
          insert.stmt->bind_json(index, *value);
        } else {
          insert.stmt->bind(index, nullptr);
        }
      }
      try {
        insert.stmt->run();
      } catch (const Error& e) {
        insert.stmt->reset();
        throw input_error(where + " (" + table + "): " + e.what());
      }
      ++result.read;
      result.inserted += db_->changes();
    }
    if (in.bad()) throw input_error("reading the import failed");
  });
  return result;
}

namespace {

// The schema version of a KB file to merge from; throws for anything that cannot be merged.
int mergeable_version(const std::filesystem::path& other) {
  int version = 0;
  {
    sql::Db probe(other, sql::Db::Mode::read_only);
    version = static_cast<int>(probe.scalar_int("PRAGMA user_version"));
  }
  if (version == 0) {
    throw input_error(other.string() + " is not an mblast knowledge base (no schema)",
                      "give the files `mblast kb init` or `mblast optimize` wrote");
  }
  if (version >= KnowledgeBase::latest_schema_version()) {
    KnowledgeBase check(
        other, KnowledgeBase::Options{.read_only = true, .target_version = 0, .seed = false});
  }
  return version;
}

void remove_sqlite_files(const std::filesystem::path& file) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::remove(file.string() + suffix, ec);
  }
}

}  // namespace

std::vector<ImportResult> merge_knowledge_bases(const std::filesystem::path& out,
                                                const std::vector<std::filesystem::path>& inputs) {
  namespace fs = std::filesystem;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (fs::exists(out) && fs::equivalent(input, out, ec)) {
      throw input_error("cannot merge " + input.string() + " into itself",
                        "name another output with -o");
    }
    mergeable_version(input);
  }
  const fs::path staged =
      (out.has_parent_path() ? out.parent_path() : fs::path(".")) /
      ("." + out.filename().string() + ".merging-" + std::to_string(static_cast<long>(::getpid())));
  remove_sqlite_files(staged);
  std::vector<ImportResult> results;
  try {
    {
      if (fs::exists(out)) {
        sql::Db existing(out, sql::Db::Mode::read_only);
        existing.prepare("VACUUM INTO ?").bind(1, staged.string()).run();
      }
      KnowledgeBase kb(staged);
      for (const auto& input : inputs) results.push_back(kb.merge_from(input));
    }
    fs::rename(staged, out);
  } catch (...) {
    remove_sqlite_files(staged);
    throw;
  }
  remove_sqlite_files(staged);  // a journal the closed connection left
  return results;
}

ImportResult KnowledgeBase::merge_from(const std::filesystem::path& other) {
  namespace fs = std::filesystem;
  if (fs::equivalent(other, path_)) {
    throw input_error("cannot merge " + other.string() + " into itself");
  }
  // Validates the source (exists, is a KB, schema not newer) and brings an older one up to date
  // in a temporary copy, so that the source file itself is never modified.
  fs::path source = other;
  fs::path upgraded;
  {
    const int version = mergeable_version(other);
    if (version < latest_schema_version()) {
      upgraded =
          fs::temp_directory_path() /
          ("mblast-merge-" + sha256_hex(other.string() + utc_now()).substr(0, 12) + ".sqlite");
      fs::copy_file(other, upgraded, fs::copy_options::overwrite_existing);
      KnowledgeBase migrated(upgraded,
                             Options{.read_only = false, .target_version = 0, .seed = false});
      source = upgraded;
    }
  }

  ImportResult result;
  db_->prepare("ATTACH DATABASE ? AS src").bind(1, source.string()).run();
  try {
    transaction([&] {
      db_->exec("PRAGMA defer_foreign_keys = ON");
      for (const auto& table : kb::transferable_tables()) {
        auto columns = table_columns(*db_, table.name);
        std::vector<std::string> selected;
        for (const auto& column : columns) {
          selected.push_back(is_derived(table.name, column) ? "0" : column);
        }
        std::string name(table.name);
        result.read += db_->scalar_int("SELECT count(*) FROM src." + name);
        db_->exec("INSERT INTO main." + name + " (" + join(columns) + ") SELECT " + join(selected) +
                  " FROM src." + name + " WHERE true ORDER BY " + std::string(table.order_by) +
                  " ON CONFLICT DO NOTHING");
        result.inserted += db_->changes();
      }
    });
  } catch (...) {
    db_->exec("DETACH DATABASE src");
    if (!upgraded.empty()) fs::remove(upgraded);
    throw;
  }
  db_->exec("DETACH DATABASE src");
  if (!upgraded.empty()) fs::remove(upgraded);
  spdlog::info("merged {}: {} rows read, {} new", other.string(), result.read, result.inserted);
  return result;
}

}  // namespace mblast
