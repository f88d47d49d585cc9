#include "kb/sqlite.hpp"

#include <spdlog/spdlog.h>

#include "mblast/error.hpp"

namespace mblast::sql {

namespace {
constexpr int kBusyTimeoutMs = 30'000;

std::string hint_for(int rc, const std::filesystem::path& path) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return "the file is not a usable SQLite knowledge base; move it away (mblast creates a new "
             "one) or restore it from a `mblast kb export` backup";
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return "make " + path.string() +
             " and its folder writable by you (SQLite's WAL journal "
             "writes files beside it), or choose another file with --kb or MBLAST_KB";
    case SQLITE_CANTOPEN:
      return "check that " + path.parent_path().string() +
             " exists and that you may write to it, or choose another file with --kb or MBLAST_KB";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process holds the knowledge base locked for too long; retry when it is done";
    case SQLITE_FULL:
      return "the disk is full; free some space";
    default:
      return {};
  }
}
}  // namespace

[[noreturn]] void Db::fail(const std::string& context, int rc) const {
  std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw input_error("knowledge base " + path_.string() + ": " + context + ": " + message,
                    hint_for(rc, path_));
}

Db::Db(const std::filesystem::path& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_FULLMUTEX;
  switch (mode) {
    case Mode::read_write_create:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case Mode::read_write:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case Mode::read_only:
      flags |= SQLITE_OPEN_READONLY;
      break;
  }
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw input_error("cannot open knowledge base " + path.string() + ": " + message,
                      hint_for(rc, path));
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Db::~Db() {
  cache_.clear();
  sqlite3_close_v2(db_);
}

Stmt& Db::cached(const std::string& sql) {
  auto& slot = cache_[sql];
  if (!slot) slot = std::make_unique<Stmt>(*this, sql);
  return *slot;
}

void Db::exec(std::string_view sql) {
  char* err = nullptr;
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string message = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw input_error("knowledge base " + path_.string() + ": " + message, hint_for(rc, path_));
  }
}

std::int64_t Db::scalar_int(std::string_view sql) {
  Stmt stmt(*this, sql);
  if (!stmt.step()) return 0;
  return stmt.get_int(0);
}

int Db::changes() const { return sqlite3_changes(db_); }

Stmt::Stmt(Db& db, std::string_view sql) : db_(&db) {
  int rc =
      sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail("preparing `" + std::string(sql.substr(0, 80)) + "`", rc);
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt::Stmt(Stmt&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

Stmt& Stmt::bind(int index, std::nullptr_t) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}
Stmt& Stmt::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Stmt& Stmt::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Stmt& Stmt::bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_json(int index, const nlohmann::json& value) {
  if (value.is_null()) return bind(index, nullptr);
  if (value.is_boolean()) return bind(index, std::int64_t{value.get<bool>() ? 1 : 0});
  if (value.is_number_integer()) return bind(index, value.get<std::int64_t>());
  if (value.is_number()) return bind(index, value.get<double>());
  if (value.is_string()) return bind(index, value.get_ref<const std::string&>());
  return bind(index, value.dump());
}

int Stmt::parameter_index(const char* name) const {
  return sqlite3_bind_parameter_index(stmt_, name);
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail("executing `" + std::string(sqlite3_sql(stmt_)).substr(0, 80) + "`", rc);
}

void Stmt::run() {
  try {
    while (step()) {
    }
  } catch (...) {
    reset();  // a cached statement must be usable again after a failed write
    throw;
  }
  reset();
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Stmt::columns() const { return sqlite3_column_count(stmt_); }
std::string Stmt::column_name(int i) const { return sqlite3_column_name(stmt_, i); }
bool Stmt::is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
std::int64_t Stmt::get_int(int i) const { return sqlite3_column_int64(stmt_, i); }
double Stmt::get_double(int i) const { return sqlite3_column_double(stmt_, i); }

std::string Stmt::get_text(int i) const {
  const auto* text = sqlite3_column_text(stmt_, i);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)));
}

std::optional<std::string> Stmt::get_opt_text(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_text(i);
}
std::optional<double> Stmt::get_opt_double(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_double(i);
}
std::optional<std::int64_t> Stmt::get_opt_int(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_int(i);
}

nlohmann::json Stmt::row_json() const {
  nlohmann::json row = nlohmann::json::object();
  for (int i = 0; i < columns(); ++i) {
    switch (sqlite3_column_type(stmt_, i)) {
      case SQLITE_NULL:
        row[column_name(i)] = nullptr;
        break;
      case SQLITE_INTEGER:
        row[column_name(i)] = get_int(i);
        break;
      case SQLITE_FLOAT:
        row[column_name(i)] = get_double(i);
        break;
      default:
        row[column_name(i)] = get_text(i);
        break;
    }
  }
  return row;
}

Transaction::Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (done_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (const std::exception& e) {
    spdlog::warn("rollback failed: {}", e.what());
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace mblast::sql
