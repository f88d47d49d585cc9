#pragma once
// A thin RAII layer over the SQLite C API: connections, prepared statements, transactions.
// Errors become mblast::Error with the SQLite message and the file name.
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mblast::sql {

class Db;

class Stmt {
 public:
  Stmt(Db& db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& other) noexcept;

  Stmt& bind(int index, std::nullptr_t);
  Stmt& bind(int index, std::int64_t value);
  Stmt& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Stmt& bind(int index, double value);
  Stmt& bind(int index, std::string_view value);
  Stmt& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Stmt& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  template <class T>
  Stmt& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, nullptr);
  }
  // Binds a JSON scalar (null, number, string, bool); arrays and objects are bound as JSON text.
  Stmt& bind_json(int index, const nlohmann::json& value);
  int parameter_index(const char* name) const;

  // Advances; true while a row is available.
  bool step();
  // Runs to completion, ignoring rows.
  void run();
  void reset();

  int columns() const;
  std::string column_name(int i) const;
  bool is_null(int i) const;
  std::int64_t get_int(int i) const;
  double get_double(int i) const;
  std::string get_text(int i) const;
  std::optional<std::string> get_opt_text(int i) const;
  std::optional<double> get_opt_double(int i) const;
  std::optional<std::int64_t> get_opt_int(int i) const;
  // The current row as a JSON object keyed by column name (SQLite types mapped naturally).
  nlohmann::json row_json() const;

 private:
  Db* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class Db {
 public:
  enum class Mode { read_write_create, read_write, read_only };
  Db(const std::filesystem::path& path, Mode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(std::string_view sql);
  Stmt prepare(std::string_view sql) { return Stmt(*this, sql); }
  // A statement prepared once per connection and reused; for hot writes. Use it with run(),
  // which resets it for the next caller.
  Stmt& cached(const std::string& sql);
  std::int64_t scalar_int(std::string_view sql);
  int changes() const;
  sqlite3* handle() { return db_; }
  const std::filesystem::path& path() const { return path_; }
  [[noreturn]] void fail(const std::string& context, int rc) const;

 private:
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, std::unique_ptr<Stmt>> cache_;  // destroyed before db_ is closed
};

// BEGIN IMMEDIATE ... COMMIT, rolled back if destroyed before commit(). Immediate, so that
// concurrent writers queue on the busy timeout at the start instead of failing mid-way.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace mblast::sql
