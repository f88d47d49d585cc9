// Reading the knowledge base: typed reads for the loop, JSON queries for people and scripts.
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "kb/row_json.hpp"
#include "kb/schema.hpp"
#include "kb/sqlite.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"

namespace mblast {

namespace {

// Builds "WHERE a AND b" with named parameters, so that each filter is one line below.
class Where {
 public:
  void add(const std::string& value, std::string condition) {
    if (value.empty()) return;
    conditions_.push_back(std::move(condition));
    values_.push_back(value);
  }
  std::string sql() const {
    std::string text;
    for (std::size_t i = 0; i < conditions_.size(); ++i) {
      text += (i == 0 ? " WHERE " : " AND ") + conditions_[i];
    }
    return text;
  }
  // Conditions refer to their value as ?N in the order added.
  void bind(sql::Stmt& stmt) const {
    for (std::size_t i = 0; i < values_.size(); ++i) stmt.bind(static_cast<int>(i) + 1, values_[i]);
  }
  std::string next() const { return "?" + std::to_string(values_.size() + 1); }

 private:
  std::vector<std::string> conditions_;
  std::vector<std::string> values_;
};

// A state filter matches the state and every state below it.
std::string state_match(const std::string& column, const std::string& param) {
  return "(" + column + " = " + param + " OR " + column + " LIKE " + param + " || '/%')";
}

const std::set<std::string>& query_kinds() {
  static const std::set<std::string> kinds = {"states",   "techniques",      "claims",
                                              "attempts", "implementations", "runs",
                                              "rewards",  "regions"};
  return kinds;
}

nlohmann::json rows_json(sql::Stmt& stmt) {
  nlohmann::json rows = nlohmann::json::array();
  while (stmt.step()) rows.push_back(stmt.row_json());
  return rows;
}

// JSON-typed columns are returned as JSON, not as text holding JSON.
void expand_json_columns(nlohmann::json& rows) {
  static const std::set<std::string> json_columns = {
      "conditions", "try_first", "backends", "states", "builtin", "config", "budgets"};
  for (auto& row : rows) {
    for (auto& [key, value] : row.items()) {
      if (json_columns.count(key) && value.is_string()) {
        value = nlohmann::json::parse(value.get<std::string>());
      }
    }
  }
}

}  // namespace

std::vector<StateRow> KnowledgeBase::states() const {
  // Definition order (seed file order first), which the state classifier uses to break ties.
  // Retired states (dropped from the seed catalogue) keep their history but are never assigned.
  auto stmt = db_->prepare("SELECT * FROM states WHERE retired = 0 ORDER BY rowid");
  std::vector<StateRow> rows;
  while (stmt.step()) rows.push_back(kb::state_from(stmt));
  return rows;
}

std::vector<TechniqueRow> KnowledgeBase::techniques(const std::string& backend) const {
  auto stmt = db_->prepare(
      "SELECT * FROM techniques WHERE ?1 = '' OR EXISTS "
      "(SELECT 1 FROM json_each(techniques.backends) WHERE value = ?1) ORDER BY id");
  stmt.bind(1, backend);
  std::vector<TechniqueRow> rows;
  while (stmt.step()) rows.push_back(kb::technique_from(stmt));
  return rows;
}

std::optional<TechniqueRow> KnowledgeBase::technique(const std::string& id) const {
  auto stmt = db_->prepare("SELECT * FROM techniques WHERE id = ?");
  stmt.bind(1, id);
  if (!stmt.step()) return std::nullopt;
  return kb::technique_from(stmt);
}

namespace {

// The columns both statistics tables share, in RewardStat's order, for `FROM table WHERE ...`.
constexpr const char* kRewardStatColumns =
    "SELECT state_id, technique_id, backend, hardware, n, sum_reward, sum_sq_reward, best_reward ";

std::vector<RewardStat> reward_stat_rows(sql::Stmt& stmt) {
  std::vector<RewardStat> rows;
  while (stmt.step()) {
    rows.push_back({stmt.get_text(0), stmt.get_text(1), stmt.get_text(2), stmt.get_text(3),
                    stmt.get_int(4), stmt.get_double(5), stmt.get_double(6), stmt.get_double(7)});
  }
  return rows;
}

}  // namespace

std::vector<RewardStat> KnowledgeBase::reward_stats(const std::string& backend,
                                                    const std::string& state_id) const {
  auto stmt = db_->prepare(std::string(kRewardStatColumns) +
                           "FROM reward_stats WHERE backend = ?1 AND (?2 = '' OR state_id = ?2)");
  stmt.bind(1, backend).bind(2, state_id);
  return reward_stat_rows(stmt);
}

std::vector<RewardStat> KnowledgeBase::region_stats(const std::string& backend,
                                                    const std::string& state_id,
                                                    const std::string& region) const {
  auto stmt =
      db_->prepare(std::string(kRewardStatColumns) +
                   "FROM region_stats WHERE backend = ?1 AND state_id = ?2 AND region = ?3");
  stmt.bind(1, backend).bind(2, state_id).bind(3, region);
  return reward_stat_rows(stmt);
}

std::vector<AttemptRow> KnowledgeBase::verified_regions(const RegionMatch match,
                                                        const std::string& key,
                                                        const std::string& backend,
                                                        const std::string& hardware) const {
  const std::string column = match == RegionMatch::same_shapes ? "region_key" : "computation_key";
  auto stmt = db_->prepare("SELECT * FROM attempts WHERE " + column +
                           " = ?1 AND backend = ?2 AND hardware = ?3 AND "
                           "outcome = 'correct' AND reward > 0 AND technique_id IS NOT NULL "
                           "ORDER BY reward DESC, created_at, id");
  stmt.bind(1, key).bind(2, backend).bind(3, hardware);
  std::vector<AttemptRow> rows;
  while (stmt.step()) rows.push_back(kb::attempt_from(stmt));
  return rows;
}

std::vector<ClaimRow> KnowledgeBase::claims(const std::string& state_id,
                                            const std::string& technique_id,
                                            std::int64_t limit) const {
  auto stmt = db_->prepare(
      "SELECT * FROM claims WHERE deprecated = 0 AND (?1 = '' OR state_id = ?1 OR state_id IS "
      "NULL) AND (?2 = '' OR technique_id = ?2) ORDER BY support - refute DESC, id LIMIT ?3");
  stmt.bind(1, state_id).bind(2, technique_id).bind(3, limit);
  std::vector<ClaimRow> rows;
  while (stmt.step()) rows.push_back(kb::claim_from(stmt));
  return rows;
}

std::vector<AttemptRow> KnowledgeBase::attempts_for_task(const std::string& task,
                                                         std::int64_t limit) const {
  auto stmt =
      db_->prepare("SELECT * FROM attempts WHERE task = ? ORDER BY created_at DESC, id LIMIT ?");
  stmt.bind(1, task).bind(2, limit);
  std::vector<AttemptRow> rows;
  while (stmt.step()) rows.push_back(kb::attempt_from(stmt));
  return rows;
}

std::vector<ImplementationRow> KnowledgeBase::top_implementations(const std::string& task_signature,
                                                                  const std::string& backend,
                                                                  std::int64_t limit) const {
  auto stmt = db_->prepare(
      "SELECT * FROM implementations WHERE task_signature = ? AND backend = ? "
      "ORDER BY speedup DESC LIMIT ?");
  stmt.bind(1, task_signature).bind(2, backend).bind(3, limit);
  std::vector<ImplementationRow> rows;
  while (stmt.step()) rows.push_back(kb::implementation_from(stmt));
  return rows;
}

std::optional<RunRow> KnowledgeBase::run(const std::string& id) const {
  auto stmt = db_->prepare("SELECT * FROM runs WHERE id = ?");
  stmt.bind(1, id);
  if (!stmt.step()) return std::nullopt;
  return kb::run_from(stmt);
}

nlohmann::json KnowledgeBase::query(const KbQuery& q) const {
  if (!query_kinds().count(q.kind)) {
    throw input_error("unknown kind '" + q.kind + "'",
                      fmt::format("use one of: {}", fmt::join(query_kinds(), ", ")));
  }
  if (q.limit <= 0) throw input_error("--limit must be positive");
  Where where;
  std::string select;
  std::string order;
  if (q.kind == "states") {
    select =
        "SELECT id, parent_id, name, origin, retired, conditions, try_first, description FROM "
        "states";
    where.add(q.state, state_match("id", where.next()));
    order = " ORDER BY id";
  } else if (q.kind == "techniques") {
    select =
        "SELECT id, implementer, backends, deprecated, origin, name, states, builtin, "
        "description FROM techniques";
    where.add(q.backend, "EXISTS (SELECT 1 FROM json_each(techniques.backends) WHERE value = " +
                             where.next() + ")");
    where.add(q.state, "EXISTS (SELECT 1 FROM json_each(techniques.states) WHERE " +
                           state_match("value", where.next()) + ")");
    where.add(q.technique, "instr(id, " + where.next() + ") > 0");
    order = " ORDER BY id";
  } else if (q.kind == "claims") {
    select =
        "SELECT id, support, refute, state_id, technique_id, backend, deprecated, origin, text, "
        "created_at FROM claims";
    where.add(q.backend, "backend = " + where.next());
    where.add(q.state, state_match("state_id", where.next()));
    where.add(q.technique, "technique_id = " + where.next());
    order = " ORDER BY support - refute DESC, id";
  } else if (q.kind == "attempts") {
    select =
        "SELECT id, created_at, task, slot, state_id, technique_id, backend, hardware, outcome, "
        "speedup, reward, time_ms, baseline_ms, tokens, iteration, step, run_id, candidate_hash, "
        "error, region, region_key, computation_key FROM attempts";
    where.add(q.task, "task = " + where.next());
    where.add(q.region, "instr(region, " + where.next() + ") > 0");
    where.add(q.backend, "backend = " + where.next());
    where.add(q.state, state_match("state_id", where.next()));
    where.add(q.technique, "technique_id = " + where.next());
    where.add(q.hardware, "hardware = " + where.next());
    order = " ORDER BY created_at DESC, id";
  } else if (q.kind == "implementations") {
    select =
        "SELECT id, task, backend, hardware, speedup, time_ms, baseline_ms, technique_id, "
        "language, atol, rtol, task_signature, run_id, created_at FROM implementations";
    where.add(q.task, "task = " + where.next());
    where.add(q.backend, "backend = " + where.next());
    where.add(q.technique, "technique_id = " + where.next());
    where.add(q.hardware, "hardware = " + where.next());
    order = " ORDER BY speedup DESC, id";
  } else if (q.kind == "runs") {
    select =
        "SELECT id, task, backend, hardware, status, best_speedup, tokens_in, tokens_out, "
        "cost_usd, started_at, finished_at FROM runs";
    where.add(q.task, "task = " + where.next());
    where.add(q.backend, "backend = " + where.next());
    where.add(q.hardware, "hardware = " + where.next());
    order = " ORDER BY started_at DESC, id";
  } else if (q.kind == "regions") {
    select =
        "SELECT region, state_id, technique_id, backend, hardware, n, sum_reward / n AS "
        "mean_reward, best_reward, last_at FROM region_stats";
    where.add(q.region, "instr(region, " + where.next() + ") > 0");
    where.add(q.backend, "backend = " + where.next());
    where.add(q.state, state_match("state_id", where.next()));
    where.add(q.technique, "technique_id = " + where.next());
    where.add(q.hardware, "hardware = " + where.next());
    order = " ORDER BY region, mean_reward DESC, state_id, technique_id";
  } else {  // rewards
    select =
        "SELECT state_id, technique_id, backend, hardware, n, sum_reward / n AS mean_reward, "
        "best_reward, last_at FROM reward_stats";
    where.add(q.backend, "backend = " + where.next());
    where.add(q.state, state_match("state_id", where.next()));
    where.add(q.technique, "technique_id = " + where.next());
    where.add(q.hardware, "hardware = " + where.next());
    order = " ORDER BY mean_reward DESC, state_id, technique_id";
  }
  auto stmt = db_->prepare(select + where.sql() + order + " LIMIT " + std::to_string(q.limit));
  where.bind(stmt);
  auto rows = rows_json(stmt);
  expand_json_columns(rows);
  return rows;
}

std::optional<nlohmann::json> KnowledgeBase::show(const std::string& id) const {
  if (id.empty()) return std::nullopt;
  auto one = [&](const std::string& sql_text, const std::string& value) {
    auto stmt = db_->prepare(sql_text);
    stmt.bind(1, value);
    auto rows = rows_json(stmt);
    expand_json_columns(rows);
    return rows;
  };
  auto found = one("SELECT * FROM states WHERE id = ?", id);
  if (found.size() == 1) {
    nlohmann::json result = {{"kind", "state"}, {"row", found[0]}};
    result["children"] = one("SELECT id, name FROM states WHERE parent_id = ? ORDER BY id", id);
    result["techniques"] =
        one("SELECT id, name, implementer FROM techniques WHERE EXISTS (SELECT 1 FROM "
            "json_each(techniques.states) WHERE value = ?1) ORDER BY id",
            id);
    result["rewards"] =
        one("SELECT technique_id, backend, hardware, n, sum_reward / n AS mean_reward, best_reward "
            "FROM reward_stats WHERE state_id = ? ORDER BY mean_reward DESC",
            id);
    return result;
  }
  found = one("SELECT * FROM techniques WHERE id = ?", id);
  if (found.size() == 1) {
    nlohmann::json result = {{"kind", "technique"}, {"row", found[0]}};
    result["claims"] =
        one("SELECT id, support, refute, state_id, text FROM claims WHERE technique_id = ? "
            "ORDER BY support - refute DESC",
            id);
    result["rewards"] = one(
        "SELECT state_id, backend, hardware, n, sum_reward / n AS mean_reward, best_reward FROM "
        "reward_stats WHERE technique_id = ? ORDER BY mean_reward DESC",
        id);
    return result;
  }
  // Content-hashed rows: a unique prefix is enough, as with git.
  const std::vector<std::pair<std::string, std::string>> hashed = {
      {"run", "runs"},
      {"attempt", "attempts"},
      {"implementation", "implementations"},
      {"claim", "claims"},
      {"evidence", "claim_evidence"}};
  nlohmann::json matches = nlohmann::json::array();
  for (const auto& [kind, table] : hashed) {
    for (auto& row :
         one("SELECT * FROM " + table + " WHERE id >= ?1 AND id < ?1 || 'g' LIMIT 2", id)) {
      matches.push_back({{"kind", kind}, {"row", row}});
    }
  }
  if (matches.empty()) return std::nullopt;
  if (matches.size() > 1) {
    throw input_error("id prefix '" + id + "' is ambiguous", "give more characters of the id");
  }
  nlohmann::json result = matches[0];
  const std::string full = result["row"]["id"];
  const std::string kind = result["kind"];
  if (kind == "claim") {
    result["evidence"] = one(
        "SELECT id, direction, attempt_id, note, created_at FROM claim_evidence WHERE claim_id = "
        "? ORDER BY created_at, id",
        full);
  } else if (kind == "run") {
    result["attempts"] =
        one("SELECT id, iteration, step, state_id, technique_id, outcome, speedup, reward FROM "
            "attempts WHERE run_id = ? ORDER BY created_at, id",
            full);
    result["implementations"] =
        one("SELECT id, speedup, technique_id FROM implementations WHERE run_id = ?", full);
  } else if (kind == "attempt") {
    result["evidence"] =
        one("SELECT id, claim_id, direction, note FROM claim_evidence WHERE attempt_id = ?", full);
  }
  return result;
}

KbStats KnowledgeBase::stats() const {
  KbStats stats;
  stats.schema_version = schema_version();
  for (const auto& table : kb::transferable_tables()) {
    stats.rows_per_table.emplace_back(
        std::string(table.name),
        db_->scalar_int("SELECT count(*) FROM " + std::string(table.name)));
  }
  for (const char* derived : {"reward_stats", "region_stats"}) {
    stats.rows_per_table.emplace_back(
        derived, db_->scalar_int(std::string("SELECT count(*) FROM ") + derived));
  }
  std::error_code ec;
  stats.file_bytes = std::filesystem::file_size(path_, ec);
  if (ec) stats.file_bytes = 0;
  auto wal = path_;
  wal += "-wal";
  if (auto wal_bytes = std::filesystem::file_size(wal, ec); !ec) stats.file_bytes += wal_bytes;
  return stats;
}

}  // namespace mblast
