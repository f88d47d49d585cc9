#include "kb/row_json.hpp"

namespace mblast::kb {

namespace {
template <class T>
nlohmann::json opt(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

// Column lookup by name, so that row readers do not depend on column order.
class Columns {
 public:
  explicit Columns(const sql::Stmt& stmt) : stmt_(stmt) {}
  int at(const char* name) const {
    for (int i = 0; i < stmt_.columns(); ++i) {
      if (stmt_.column_name(i) == name) return i;
    }
    throw std::logic_error(std::string("query lacks column ") + name);
  }
  std::string text(const char* name) const { return stmt_.get_text(at(name)); }
  std::optional<std::string> opt_text(const char* name) const {
    return stmt_.get_opt_text(at(name));
  }
  std::optional<double> opt_double(const char* name) const {
    return stmt_.get_opt_double(at(name));
  }
  std::optional<std::int64_t> opt_int(const char* name) const {
    return stmt_.get_opt_int(at(name));
  }
  std::int64_t integer(const char* name) const { return stmt_.get_int(at(name)); }
  double real(const char* name) const { return stmt_.get_double(at(name)); }
  nlohmann::json json(const char* name) const {
    auto value = opt_text(name);
    return value ? nlohmann::json::parse(*value) : nlohmann::json();
  }

 private:
  const sql::Stmt& stmt_;
};
}  // namespace

nlohmann::json to_json(const AttemptRow& r) {
  nlohmann::json j = {{"id", r.id},
                      {"run_id", opt(r.run_id)},
                      {"task", r.task},
                      {"slot", r.slot},
                      {"state_id", opt(r.state_id)},
                      {"technique_id", opt(r.technique_id)},
                      {"backend", r.backend},
                      {"hardware", r.hardware},
                      {"iteration", opt(r.iteration)},
                      {"step", opt(r.step)},
                      {"candidate_hash", opt(r.candidate_hash)},
                      {"outcome", r.outcome},
                      {"error", opt(r.error)},
                      {"time_ms", opt(r.time_ms)},
                      {"baseline_ms", opt(r.baseline_ms)},
                      {"speedup", opt(r.speedup)},
                      {"reward", opt(r.reward)},
                      {"tokens", r.tokens},
                      {"created_at", r.created_at}};
  // Absent rather than null outside regions, so that a whole-model attempt's content id is what
  // it was before regions were recorded.
  if (r.region) j["region"] = *r.region;
  if (r.region_key) j["region_key"] = *r.region_key;
  if (r.computation_key) j["computation_key"] = *r.computation_key;
  return j;
}

nlohmann::json to_json(const ImplementationRow& r) {
  return {{"id", r.id},
          {"task", r.task},
          {"task_signature", r.task_signature},
          {"backend", r.backend},
          {"hardware", r.hardware},
          {"technique_id", opt(r.technique_id)},
          {"run_id", opt(r.run_id)},
          {"attempt_id", opt(r.attempt_id)},
          {"language", r.language},
          {"source", r.source},
          {"speedup", opt(r.speedup)},
          {"time_ms", opt(r.time_ms)},
          {"baseline_ms", opt(r.baseline_ms)},
          {"atol", opt(r.atol)},
          {"rtol", opt(r.rtol)},
          {"created_at", r.created_at}};
}

StateRow state_from(const sql::Stmt& stmt) {
  Columns c(stmt);
  StateRow row;
  row.id = c.text("id");
  row.parent_id = c.opt_text("parent_id");
  row.name = c.text("name");
  row.description = c.text("description");
  row.conditions = c.json("conditions");
  row.try_first = c.json("try_first").get<std::vector<std::string>>();
  row.origin = c.text("origin");
  return row;
}

TechniqueRow technique_from(const sql::Stmt& stmt) {
  Columns c(stmt);
  TechniqueRow row;
  row.id = c.text("id");
  row.name = c.text("name");
  row.description = c.text("description");
  row.backends = c.json("backends").get<std::vector<std::string>>();
  row.implementer = c.text("implementer");
  row.states = c.json("states").get<std::vector<std::string>>();
  row.builtin = BuiltinSpec::from_json(c.json("builtin"));
  row.deprecated = c.integer("deprecated") != 0;
  row.origin = c.text("origin");
  return row;
}

AttemptRow attempt_from(const sql::Stmt& stmt) {
  Columns c(stmt);
  AttemptRow row;
  row.id = c.text("id");
  row.run_id = c.opt_text("run_id");
  row.task = c.text("task");
  row.slot = c.text("slot");
  row.state_id = c.opt_text("state_id");
  row.technique_id = c.opt_text("technique_id");
  row.backend = c.text("backend");
  row.hardware = c.text("hardware");
  row.iteration = c.opt_int("iteration");
  row.step = c.opt_int("step");
  row.candidate_hash = c.opt_text("candidate_hash");
  row.outcome = c.text("outcome");
  row.error = c.opt_text("error");
  row.time_ms = c.opt_double("time_ms");
  row.baseline_ms = c.opt_double("baseline_ms");
  row.speedup = c.opt_double("speedup");
  row.reward = c.opt_double("reward");
  row.tokens = c.integer("tokens");
  row.created_at = c.text("created_at");
  row.region = c.opt_text("region");
  row.region_key = c.opt_text("region_key");
  row.computation_key = c.opt_text("computation_key");
  return row;
}

ImplementationRow implementation_from(const sql::Stmt& stmt) {
  Columns c(stmt);
  ImplementationRow row;
  row.id = c.text("id");
  row.task = c.text("task");
  row.task_signature = c.text("task_signature");
  row.backend = c.text("backend");
  row.hardware = c.text("hardware");
  row.technique_id = c.opt_text("technique_id");
  row.run_id = c.opt_text("run_id");
  row.attempt_id = c.opt_text("attempt_id");
  row.language = c.text("language");
  row.source = c.text("source");
  row.speedup = c.opt_double("speedup");
  row.time_ms = c.opt_double("time_ms");
  row.baseline_ms = c.opt_double("baseline_ms");
  row.atol = c.opt_double("atol");
  row.rtol = c.opt_double("rtol");
  row.created_at = c.text("created_at");
  return row;
}

ClaimRow claim_from(const sql::Stmt& stmt) {
  Columns c(stmt);
  ClaimRow row;
  row.id = c.text("id");
  row.text = c.text("text");
  row.state_id = c.opt_text("state_id");
  row.technique_id = c.opt_text("technique_id");
  row.backend = c.opt_text("backend");
  row.support = c.integer("support");
  row.refute = c.integer("refute");
  row.deprecated = c.integer("deprecated") != 0;
  row.origin = c.text("origin");
  row.created_at = c.text("created_at");
  return row;
}

RunRow run_from(const sql::Stmt& stmt) {
  Columns c(stmt);
  RunRow row;
  row.id = c.text("id");
  row.task = c.text("task");
  row.backend = c.text("backend");
  row.hardware = c.text("hardware");
  row.status = c.text("status");
  row.config = c.json("config");
  row.budgets = c.json("budgets");
  row.tokens_in = c.integer("tokens_in");
  row.tokens_out = c.integer("tokens_out");
  row.cost_usd = c.real("cost_usd");
  row.best_speedup = c.opt_double("best_speedup");
  row.started_at = c.text("started_at");
  row.finished_at = c.opt_text("finished_at");
  return row;
}

}  // namespace mblast::kb
