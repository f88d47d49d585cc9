#pragma once
// The knowledge base: a SQLite file (WAL, foreign keys, busy timeout) holding what mblast learns.
// Schema migrations and the seed catalogue are compiled in (kb_schema/) and applied on open.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/support.hpp"

namespace mblast {

namespace sql {
class Db;
}

struct StateRow {
  std::string id;  // slug, e.g. "memory-bound/uncoalesced"
  std::optional<std::string> parent_id;
  std::string name;
  std::string description;
  nlohmann::json conditions = nlohmann::json::array();
  // The techniques most likely to win in this state, best bet first: the selector's ranked prior.
  std::vector<std::string> try_first;
  std::string origin = "user";
};

// How a built-in technique is applied (the "builtin" object of the catalogue): the backend's
// transform, the options it requires (allow_tf32, torch_compile, ...), the groups whose members
// do not stack, the ops the problem must have, the techniques it applies after, whether it
// also applies to one region of the model ("takes_region"), whether it applies to the problem's
// Model only and is stacked under a lineage of built-ins by re-applying them over it ("first":
// a transform that traces the Model's own forward), and when not to offer it ("avoid_when").
// Read leniently (entries that are not strings are left out); written back as it came.
struct BuiltinSpec {
  std::string transform;
  std::vector<std::string> requirements, groups, needs_ops, after;  // requirements: "requires"
  bool takes_region = false;  // applies to one region window as well as to the whole model
  bool first = false;         // applies to the Model only: other built-ins are re-applied over it
  // Conditions ({metric, op, value}, as states have) under which the built-in is not offered: any
  // one holding on the current implementation's signature rules it out there.
  nlohmann::json avoid_when = nlohmann::json::array();

  // nullopt for anything but an object.
  static std::optional<BuiltinSpec> from_json(const nlohmann::json& object);
  const nlohmann::json& to_json() const { return json_; }

 private:
  nlohmann::json json_;
};

struct TechniqueRow {
  std::string id;  // slug, e.g. "cuda/shared-memory-tiling"
  std::string name;
  std::string description;
  std::vector<std::string> backends;
  std::string implementer = "llm";  // "llm" or "builtin"
  std::vector<std::string> states;
  std::optional<BuiltinSpec> builtin;  // for implementer "builtin"
  bool deprecated = false;
  std::string origin = "user";
};

struct RunRow {
  std::string id;  // set by add_run
  std::string task;
  std::string backend;
  std::string hardware;
  std::string status = "running";
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json budgets = nlohmann::json::object();
  std::int64_t tokens_in = 0;
  std::int64_t tokens_out = 0;
  double cost_usd = 0;
  std::optional<double> best_speedup;
  std::string started_at;
  std::optional<std::string> finished_at;
};

struct AttemptRow {
  std::string id;  // content hash, set by add_attempt
  std::optional<std::string> run_id;
  std::string task;
  std::string slot = "model";
  std::optional<std::string> state_id;
  std::optional<std::string> technique_id;
  std::string backend;
  std::string hardware;
  std::optional<std::int64_t> iteration;
  std::optional<std::int64_t> step;
  std::optional<std::string> candidate_hash;
  std::string
      outcome;  // correct | incorrect | compile_error | runtime_error | timeout | cheat | skipped
  std::optional<std::string> error;
  std::optional<double> time_ms;
  std::optional<double> baseline_ms;
  std::optional<double> speedup;
  std::optional<double> reward;
  std::int64_t tokens = 0;
  std::string created_at;  // ISO 8601 UTC; now() when empty
  // An attempt on a region window: the region's signature (kinds|shape class), exact key and
  // computation key (worker/mblast_regions/identity.py). Its reward goes to region_stats, not
  // reward_stats.
  std::optional<std::string> region;
  std::optional<std::string> region_key;
  std::optional<std::string> computation_key;  // the region's key without shapes
};

struct ImplementationRow {
  std::string id;
  std::string task;
  std::string task_signature;
  std::string backend;
  std::string hardware;
  std::optional<std::string> technique_id;
  std::optional<std::string> run_id;
  std::optional<std::string> attempt_id;
  std::string language;
  std::string source;
  std::optional<double> speedup;
  std::optional<double> time_ms;
  std::optional<double> baseline_ms;
  std::optional<double> atol;
  std::optional<double> rtol;
  std::string created_at;
};

struct ClaimRow {
  std::string id;
  std::string text;
  std::optional<std::string> state_id;
  std::optional<std::string> technique_id;
  std::optional<std::string> backend;
  std::int64_t support = 0;  // derived from evidence
  std::int64_t refute = 0;   // derived from evidence
  bool deprecated = false;
  std::string origin = "critic";
  std::string created_at;
};

struct RewardStat {
  std::string state_id;
  std::string technique_id;
  std::string backend;
  std::string hardware;
  std::int64_t n = 0;
  double sum_reward = 0;
  double sum_sq_reward = 0;
  double best_reward = 0;
  double mean() const { return n ? sum_reward / static_cast<double>(n) : 0.0; }
};

// Filters for `kb query`; empty fields do not filter.
struct KbQuery {
  std::string kind =
      "techniques";  // states|techniques|claims|attempts|implementations|runs|rewards|regions
  std::string backend, state, technique, task, hardware;
  std::string region;  // regions and attempts: region signatures containing this text
  std::int64_t limit = 50;
};

struct KbStats {
  std::vector<std::pair<std::string, std::int64_t>> rows_per_table;
  std::uintmax_t file_bytes = 0;
  int schema_version = 0;
};

struct ImportResult {
  std::int64_t read = 0;      // rows read
  std::int64_t inserted = 0;  // rows new to this KB
};

class KnowledgeBase {
 public:
  struct Options {
    bool read_only = false;
    // Apply migrations up to this version only (tests of upgrades); 0 = latest.
    int target_version = 0;
    bool seed = true;
  };

  // Opens (creating file and folders if needed) and migrates. Throws mblast::Error (exit 2) for
  // a corrupt, unreadable or newer-than-supported file.
  explicit KnowledgeBase(const std::filesystem::path& path);
  KnowledgeBase(const std::filesystem::path& path, Options options);
  ~KnowledgeBase();
  KnowledgeBase(const KnowledgeBase&) = delete;
  KnowledgeBase& operator=(const KnowledgeBase&) = delete;

  static int latest_schema_version();
  int schema_version() const;
  const std::filesystem::path& path() const;

  // Runs `body` in one transaction (BEGIN IMMEDIATE ... COMMIT); the add_* calls inside join it.
  void transaction(const std::function<void()>& body);
  // Whether a transaction() body is running on this connection now.
  bool in_transaction() const { return in_transaction_ > 0; }

  void add_state(const StateRow& row);
  void add_technique(const TechniqueRow& row);
  void deprecate_technique(const std::string& id);
  std::string add_run(RunRow row);          // returns the new run id
  void update_run(const RunRow& row);       // status, totals, best, finished_at
  std::string add_attempt(AttemptRow row);  // returns the content hash; idempotent
  std::string add_implementation(ImplementationRow row);
  std::string add_claim(ClaimRow row);
  // Records support or refute for a claim; counts on the claim follow.
  std::string add_evidence(const std::string& claim_id,
                           const std::optional<std::string>& attempt_id,
                           const std::string& direction, const std::string& note);
  void deprecate_claim(const std::string& id);

  std::vector<StateRow> states() const;  // in definition order (the seed file's first)
  std::vector<TechniqueRow> techniques(const std::string& backend = {}) const;
  std::optional<TechniqueRow> technique(const std::string& id) const;
  std::vector<RewardStat> reward_stats(const std::string& backend,
                                       const std::string& state_id = {}) const;
  // The statistics of one region signature (kinds|shape class) in a state, as whole-model ones.
  std::vector<RewardStat> region_stats(const std::string& backend, const std::string& state_id,
                                       const std::string& region) const;
  // Correct attempts that sped up a region with this key on this backend and hardware, best
  // reward first: where the same computation was made faster before, at the same shapes (the
  // region's exact key) or at any (its computation key).
  enum class RegionMatch { same_shapes, any_shapes };
  std::vector<AttemptRow> verified_regions(RegionMatch match, const std::string& key,
                                           const std::string& backend,
                                           const std::string& hardware) const;
  std::vector<ClaimRow> claims(const std::string& state_id, const std::string& technique_id,
                               std::int64_t limit = 20) const;
  std::vector<AttemptRow> attempts_for_task(const std::string& task, std::int64_t limit = 50) const;
  std::vector<ImplementationRow> top_implementations(const std::string& task_signature,
                                                     const std::string& backend,
                                                     std::int64_t limit = 5) const;
  std::optional<RunRow> run(const std::string& id) const;

  // For people and scripts: rows of one kind as JSON objects, filtered.
  nlohmann::json query(const KbQuery& query) const;
  // One row by id or unique id prefix, with its related rows; nullopt when nothing matches.
  std::optional<nlohmann::json> show(const std::string& id_or_prefix) const;
  KbStats stats() const;

  // JSON Lines, one {"table": ..., "row": {...}} per line, tables in dependency order, rows by id.
  void export_jsonl(std::ostream& out) const;
  ImportResult import_jsonl(std::istream& in);
  // Folds another KB file into this one; rows already present are skipped.
  ImportResult merge_from(const std::filesystem::path& other);

  std::string integrity_check() const;  // "ok" or SQLite's report

  sql::Db& db() const { return *db_; }

 private:
  std::unique_ptr<sql::Db> db_;
  std::filesystem::path path_;
  int in_transaction_ = 0;
};

// $MBLAST_KB, else $XDG_DATA_HOME/mblast/kb.sqlite, else ~/.local/share/mblast/kb.sqlite.
std::filesystem::path default_kb_path();

// Folds `inputs` into the KB at `out` all or nothing: every input is checked first, and the merge
// runs in a copy beside `out` that replaces it (or becomes it) only once every input went in. A
// failure leaves `out` as it was, or absent if it was. Do not merge into a KB another process has
// open.
std::vector<ImportResult> merge_knowledge_bases(const std::filesystem::path& out,
                                                const std::vector<std::filesystem::path>& inputs);

}  // namespace mblast
