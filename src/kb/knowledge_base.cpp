// Opening, migrating and writing to the knowledge base.
#include <spdlog/spdlog.h>

#include <random>

#include "kb/row_json.hpp"
#include "kb/schema.hpp"
#include "kb/sqlite.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"

namespace mblast {

namespace {

int read_user_version(sql::Db& db) {
  return static_cast<int>(db.scalar_int("PRAGMA user_version"));
}

void migrate(sql::Db& db, int from, int to) {
  for (const auto& migration : kb::migrations()) {
    if (migration.version <= from || migration.version > to) continue;
    sql::Transaction tx(db);
    db.exec(migration.sql);
    db.exec("PRAGMA user_version = " + std::to_string(migration.version));
    tx.commit();
    spdlog::info("knowledge base {}: applied migration {}", db.path().string(), migration.name);
  }
}

std::string content_id(const nlohmann::json& content) { return sha256_hex(content.dump()); }

nlohmann::json opt(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace

int KnowledgeBase::latest_schema_version() { return static_cast<int>(kb::migrations().size()); }

KnowledgeBase::KnowledgeBase(const std::filesystem::path& path) : KnowledgeBase(path, Options{}) {}

KnowledgeBase::KnowledgeBase(const std::filesystem::path& path, Options options) : path_(path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    throw input_error(
        "the knowledge base " + path.string() + " is a directory, not a file",
        "give --kb (or MBLAST_KB) a file path, e.g. " + (path / "kb.sqlite").string());
  }
  if (options.read_only) {
    if (!fs::exists(path)) {
      throw input_error("knowledge base " + path.string() + " does not exist",
                        "create it with `mblast kb init --kb " + path.string() + "`");
    }
    db_ = std::make_unique<sql::Db>(path, sql::Db::Mode::read_only);
  } else {
    std::error_code ec;
    if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
    if (ec) {
      throw input_error(
          "cannot create the folder for knowledge base " + path.string() + ": " + ec.message(),
          "choose a writable location with --kb or MBLAST_KB");
    }
    db_ = std::make_unique<sql::Db>(path, sql::Db::Mode::read_write_create);
  }

  // The first real read tells a corrupt or foreign file apart from a knowledge base.
  int version = read_user_version(*db_);
  db_->exec("PRAGMA foreign_keys = ON");
  const int latest = latest_schema_version();
  if (version > latest) {
    throw input_error("knowledge base " + path.string() + " has schema version " +
                          std::to_string(version) + ", newer than this mblast supports (" +
                          std::to_string(latest) + ")",
                      "upgrade mblast, or use another file with --kb");
  }
  if (options.read_only) {
    if (version < latest) {
      throw input_error("knowledge base " + path.string() + " has schema version " +
                            std::to_string(version) + " and must be upgraded to " +
                            std::to_string(latest) + " before this read",
                        "open it once without read-only access, e.g. `mblast kb stats --kb " +
                            path.string() + "`");
    }
    return;
  }
  {
    auto stmt = db_->prepare("PRAGMA journal_mode = WAL");
    stmt.step();
    if (stmt.get_text(0) != "wal") {
      spdlog::warn(
          "knowledge base {}: WAL journal not available (got {}); concurrent writers "
          "will wait longer",
          path.string(), stmt.get_text(0));
    }
  }
  db_->exec("PRAGMA synchronous = NORMAL");
  const int target = options.target_version > 0 ? options.target_version : latest;
  if (version < target) migrate(*db_, version, target);
  if (options.seed && target == latest) kb::apply_seed(*db_);
}

KnowledgeBase::~KnowledgeBase() = default;

int KnowledgeBase::schema_version() const { return read_user_version(*db_); }
const std::filesystem::path& KnowledgeBase::path() const { return path_; }

void KnowledgeBase::transaction(const std::function<void()>& body) {
  if (in_transaction_ > 0) {
    body();
    return;
  }
  sql::Transaction tx(*db_);
  ++in_transaction_;
  try {
    body();
  } catch (...) {
    --in_transaction_;
    throw;
  }
  --in_transaction_;
  tx.commit();
}

void KnowledgeBase::add_state(const StateRow& row) {
  transaction([&] {
    db_->prepare(
           "INSERT INTO states (id, parent_id, name, description, conditions, try_first, origin, "
           "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
        .bind(1, row.id)
        .bind(2, row.parent_id)
        .bind(3, row.name)
        .bind(4, row.description)
        .bind(5, row.conditions.dump())
        .bind(6, nlohmann::json(row.try_first).dump())
        .bind(7, row.origin)
        .bind(8, utc_now())
        .run();
  });
}

void KnowledgeBase::add_technique(const TechniqueRow& row) {
  if (row.implementer != "llm" && row.implementer != "builtin") {
    throw input_error("technique " + row.id + ": implementer must be 'llm' or 'builtin', not '" +
                      row.implementer + "'");
  }
  transaction([&] {
    auto stmt = db_->prepare(
        "INSERT INTO techniques (id, name, description, backends, implementer, states, builtin, "
        "deprecated, origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING");
    stmt.bind(1, row.id)
        .bind(2, row.name)
        .bind(3, row.description)
        .bind(4, nlohmann::json(row.backends).dump())
        .bind(5, row.implementer)
        .bind(6, nlohmann::json(row.states).dump());
    if (row.builtin) {
      stmt.bind(7, row.builtin->to_json().dump());
    } else {
      stmt.bind(7, nullptr);
    }
    stmt.bind(8, std::int64_t{row.deprecated}).bind(9, row.origin).bind(10, utc_now()).run();
  });
}

void KnowledgeBase::deprecate_technique(const std::string& id) {
  transaction(
      [&] { db_->prepare("UPDATE techniques SET deprecated = 1 WHERE id = ?").bind(1, id).run(); });
}

std::string KnowledgeBase::add_run(RunRow row) {
  if (row.started_at.empty()) row.started_at = utc_now();
  std::random_device entropy;
  nlohmann::json identity = {{"task", row.task},
                             {"backend", row.backend},
                             {"hardware", row.hardware},
                             {"started_at", row.started_at},
                             {"nonce", std::to_string(entropy()) + std::to_string(entropy())}};
  row.id = content_id(identity);
  transaction([&] {
    db_->prepare(
           "INSERT INTO runs (id, task, backend, hardware, status, config, budgets, started_at) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, row.id)
        .bind(2, row.task)
        .bind(3, row.backend)
        .bind(4, row.hardware)
        .bind(5, row.status)
        .bind(6, row.config.dump())
        .bind(7, row.budgets.dump())
        .bind(8, row.started_at)
        .run();
  });
  return row.id;
}

void KnowledgeBase::update_run(const RunRow& row) {
  transaction([&] {
    db_->prepare(
           "UPDATE runs SET status = ?, tokens_in = ?, tokens_out = ?, cost_usd = ?, "
           "best_speedup = ?, finished_at = ? WHERE id = ?")
        .bind(1, row.status)
        .bind(2, row.tokens_in)
        .bind(3, row.tokens_out)
        .bind(4, row.cost_usd)
        .bind(5, row.best_speedup)
        .bind(6, row.finished_at)
        .bind(7, row.id)
        .run();
    if (db_->changes() == 0) throw input_error("no run with id " + row.id);
  });
}

std::string KnowledgeBase::add_attempt(AttemptRow row) {
  if (row.created_at.empty()) row.created_at = utc_now();
  nlohmann::json content = kb::to_json(row);
  content.erase("id");
  row.id = content_id(content);
  transaction([&] {
    auto& stmt = db_->cached(
        "INSERT INTO attempts (id, run_id, task, slot, state_id, technique_id, backend, hardware, "
        "iteration, step, candidate_hash, outcome, error, time_ms, baseline_ms, speedup, reward, "
        "tokens, created_at, region, region_key, computation_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING");
    stmt.bind(1, row.id)
        .bind(2, row.run_id)
        .bind(3, row.task)
        .bind(4, row.slot)
        .bind(5, row.state_id)
        .bind(6, row.technique_id)
        .bind(7, row.backend)
        .bind(8, row.hardware)
        .bind(9, row.iteration)
        .bind(10, row.step)
        .bind(11, row.candidate_hash)
        .bind(12, row.outcome)
        .bind(13, row.error)
        .bind(14, row.time_ms)
        .bind(15, row.baseline_ms)
        .bind(16, row.speedup)
        .bind(17, row.reward)
        .bind(18, row.tokens)
        .bind(19, row.created_at)
        .bind(20, row.region)
        .bind(21, row.region_key)
        .bind(22, row.computation_key)
        .run();
  });
  return row.id;
}

std::string KnowledgeBase::add_implementation(ImplementationRow row) {
  if (row.created_at.empty()) row.created_at = utc_now();
  nlohmann::json content = kb::to_json(row);
  content.erase("id");
  content.erase("created_at");
  row.id = content_id(content);
  transaction([&] {
    db_->prepare(
           "INSERT INTO implementations (id, task, task_signature, backend, hardware, "
           "technique_id, run_id, attempt_id, language, source, speedup, time_ms, baseline_ms, "
           "atol, rtol, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
           "ON CONFLICT (id) DO NOTHING")
        .bind(1, row.id)
        .bind(2, row.task)
        .bind(3, row.task_signature)
        .bind(4, row.backend)
        .bind(5, row.hardware)
        .bind(6, row.technique_id)
        .bind(7, row.run_id)
        .bind(8, row.attempt_id)
        .bind(9, row.language)
        .bind(10, row.source)
        .bind(11, row.speedup)
        .bind(12, row.time_ms)
        .bind(13, row.baseline_ms)
        .bind(14, row.atol)
        .bind(15, row.rtol)
        .bind(16, row.created_at)
        .run();
  });
  return row.id;
}

std::string KnowledgeBase::add_claim(ClaimRow row) {
  if (row.created_at.empty()) row.created_at = utc_now();
  row.id = content_id({{"text", row.text},
                       {"state_id", opt(row.state_id)},
                       {"technique_id", opt(row.technique_id)},
                       {"backend", opt(row.backend)}});
  transaction([&] {
    db_->prepare(
           "INSERT INTO claims (id, text, state_id, technique_id, backend, deprecated, origin, "
           "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
        .bind(1, row.id)
        .bind(2, row.text)
        .bind(3, row.state_id)
        .bind(4, row.technique_id)
        .bind(5, row.backend)
        .bind(6, std::int64_t{row.deprecated})
        .bind(7, row.origin)
        .bind(8, row.created_at)
        .run();
  });
  return row.id;
}

std::string KnowledgeBase::add_evidence(const std::string& claim_id,
                                        const std::optional<std::string>& attempt_id,
                                        const std::string& direction, const std::string& note) {
  if (direction != "support" && direction != "refute") {
    throw input_error("evidence direction must be 'support' or 'refute', not '" + direction + "'");
  }
  std::string id = content_id({{"claim_id", claim_id},
                               {"attempt_id", opt(attempt_id)},
                               {"direction", direction},
                               {"note", note}});
  transaction([&] {
    db_->prepare(
           "INSERT INTO claim_evidence (id, claim_id, attempt_id, direction, note, created_at) "
           "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
        .bind(1, id)
        .bind(2, claim_id)
        .bind(3, attempt_id)
        .bind(4, direction)
        .bind(5, note)
        .bind(6, utc_now())
        .run();
  });
  return id;
}

void KnowledgeBase::deprecate_claim(const std::string& id) {
  transaction(
      [&] { db_->prepare("UPDATE claims SET deprecated = 1 WHERE id = ?").bind(1, id).run(); });
}

std::string KnowledgeBase::integrity_check() const {
  auto stmt = db_->prepare("PRAGMA integrity_check");
  std::string report;
  while (stmt.step()) {
    if (!report.empty()) report += "\n";
    report += stmt.get_text(0);
  }
  return report;
}

}  // namespace mblast
