#include "kb/schema.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <string>

#include <nlohmann/json.hpp>

#include "mblast/embedded.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"

namespace mblast::kb {

namespace {

std::vector<Migration> load_migrations() {
  std::vector<Migration> result;
  for (const auto& file : embedded::schema::files()) {
    constexpr std::string_view prefix = "migrations/";
    if (!file.path.starts_with(prefix) || !file.path.ends_with(".sql")) continue;
    std::string_view name = file.path.substr(prefix.size());
    int version = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), version);
    if (ec != std::errc() || *end != '_') {
      throw std::logic_error("migration file name must start with its number: " +
                             std::string(name));
    }
    result.push_back({version, name, file.contents});
  }
  std::sort(result.begin(), result.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (std::size_t i = 0; i < result.size(); ++i) {
    if (result[i].version != static_cast<int>(i) + 1) {
      throw std::logic_error("migrations must be numbered 1, 2, ... without gaps");
    }
  }
  return result;
}

std::string_view embedded_file(std::string_view path) {
  for (const auto& file : embedded::schema::files()) {
    if (file.path == path) return file.contents;
  }
  throw std::logic_error("missing embedded file " + std::string(path));
}

std::string meta_get(sql::Db& db, const char* key) {
  auto stmt = db.prepare("SELECT value FROM meta WHERE key = ?");
  stmt.bind(1, key);
  return stmt.step() ? stmt.get_text(0) : std::string();
}

void meta_set(sql::Db& db, const char* key, const std::string& value) {
  auto stmt = db.prepare(
      "INSERT INTO meta (key, value) VALUES (?, ?) "
      "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  stmt.bind(1, key).bind(2, value).run();
}

// Seed states this catalogue no longer lists are retired, not deleted: what was recorded under
// them keeps its state; a state the catalogue lists again comes back.
void retire_dropped_seed_states(sql::Db& db, const nlohmann::json& seed_states) {
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& s : seed_states) ids.push_back(s.at("id"));
  auto stmt = db.prepare(
      "UPDATE states SET retired = (id NOT IN (SELECT value FROM json_each(?))) "
      "WHERE origin = 'seed'");
  stmt.bind(1, ids.dump()).run();
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all = load_migrations();
  return all;
}

void apply_seed(sql::Db& db) {
  std::string_view states_text = embedded_file("seed/states.json");
  std::string_view techniques_text = embedded_file("seed/techniques.json");
  std::string seed_hash =
      sha256_hex(std::string(states_text) + '\0' + std::string(techniques_text));
  if (meta_get(db, "seed_hash") == seed_hash) return;

  auto states = nlohmann::json::parse(states_text);
  auto techniques = nlohmann::json::parse(techniques_text);
  // Seed rows carry a fixed date rather than the time of seeding, so that the same seed is the
  // same rows on every machine and exports of different KBs compare equal.
  const std::string now = "2026-11-29T00:00:00.000Z";
  sql::Transaction tx(db);
  // Seed rows follow the binary (descriptions may improve); rows the critic or a user wrote are
  // never overwritten.
  auto state_stmt = db.prepare(
      "INSERT INTO states (id, parent_id, name, description, conditions, try_first, origin, "
      "created_at) VALUES (?, ?, ?, ?, ?, ?, 'seed', ?) ON CONFLICT (id) DO UPDATE SET "
      "parent_id = excluded.parent_id, name = excluded.name, description = excluded.description, "
      "conditions = excluded.conditions, try_first = excluded.try_first "
      "WHERE states.origin = 'seed'");
  db.exec("PRAGMA defer_foreign_keys = ON");
  for (const auto& s : states) {
    state_stmt.bind(1, s.at("id").get<std::string>())
        .bind_json(2, s.value("parent", nlohmann::json()))
        .bind(3, s.at("name").get<std::string>())
        .bind(4, s.at("description").get<std::string>())
        .bind(5, s.value("conditions", nlohmann::json::array()).dump())
        .bind(6, s.value("try_first", nlohmann::json::array()).dump())
        .bind(7, now)
        .run();
  }
  auto technique_stmt = db.prepare(
      "INSERT INTO techniques (id, name, description, backends, implementer, states, builtin, "
      "origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'seed', ?) ON CONFLICT (id) DO UPDATE SET "
      "name = excluded.name, description = excluded.description, backends = excluded.backends, "
      "implementer = excluded.implementer, states = excluded.states, builtin = excluded.builtin "
      "WHERE techniques.origin = 'seed'");
  for (const auto& t : techniques) {
    auto builtin = t.value("builtin", nlohmann::json());
    technique_stmt.bind(1, t.at("id").get<std::string>())
        .bind(2, t.at("name").get<std::string>())
        .bind(3, t.at("description").get<std::string>())
        .bind(4, t.at("backends").dump())
        .bind(5, t.at("implementer").get<std::string>())
        .bind(6, t.value("states", nlohmann::json::array()).dump());
    if (builtin.is_null()) {
      technique_stmt.bind(7, nullptr);
    } else {
      technique_stmt.bind(7, builtin.dump());
    }
    technique_stmt.bind(8, now).run();
  }
  retire_dropped_seed_states(db, states);
  meta_set(db, "seed_hash", seed_hash);
  tx.commit();
  spdlog::debug("seed catalogue applied: {} states, {} techniques", states.size(),
                techniques.size());
}

const std::vector<TableInfo>& transferable_tables() {
  static const std::vector<TableInfo> tables = {
      {"states", "id"},          {"techniques", "id"}, {"runs", "id"},           {"attempts", "id"},
      {"implementations", "id"}, {"claims", "id"},     {"claim_evidence", "id"},
  };
  return tables;
}

}  // namespace mblast::kb
