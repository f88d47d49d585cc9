// `mblast report --json`: every metric and row as one object.
#include "mblast/json_fields.hpp"
#include "mblast/report.hpp"
#include "report/compare_render.hpp"
#include "report/json_util.hpp"

namespace mblast::report {

namespace {

nlohmann::json speedup_json(const SpeedupMetrics& m) {
  nlohmann::json curve = nlohmann::json::array();
  for (int i = 0; i <= 30; ++i) {
    const double p = i / 10.0;
    curve.push_back({{"p", p}, {"fast_p", fast_p(m.speedups, m.problems, p)}});
  }
  return {{"baseline", m.baseline}, {"problems", m.problems},
          {"correct", m.correct},   {"fast_p", m.fast_p},
          {"fast_p_curve", curve},  {"geomean_speedup", optional_json(m.geomean)},
          {"speedups", m.speedups}};
}

nlohmann::json states_json(const std::vector<StateVisit>& states) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : states) {
    nlohmann::json visit = {{"state", v.state},
                            {"steps", v.steps},
                            {"first_step", v.first_step},
                            {"evidence", v.evidence}};
    if (v.ncu_state) visit["ncu_state"] = *v.ncu_state;
    if (!v.ncu_evidence.empty()) visit["ncu_evidence"] = v.ncu_evidence;
    list.push_back(std::move(visit));
  }
  return list;
}

nlohmann::json failures_json(const std::vector<FailedStep>& failures) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : failures) {
    list.push_back({{"step", f.step},
                    {"technique", f.technique},
                    {"outcome", f.outcome},
                    {"error", f.error},
                    {"cause", failure_cause(f.error)}});
  }
  return list;
}

nlohmann::json causes_json(const std::vector<FailureCause>& causes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : causes) {
    list.push_back({{"outcome", c.outcome},
                    {"cause", c.cause},
                    {"steps", c.steps},
                    {"problems", c.problems},
                    {"techniques", c.techniques}});
  }
  return list;
}

nlohmann::json row_json(const ProblemRow& row) {
  return {{"name", row.name},
          {"task", row.task},
          {"status", row.status},
          {"correct", row.correct},
          {"speedup", optional_json(row.speedup)},
          {"speedup_baseline",
           row.speedup_baseline.empty() ? nlohmann::json() : nlohmann::json(row.speedup_baseline)},
          {"speedup_vs_compile", optional_json(row.speedup_vs_compile)},
          {"sol_score", optional_json(row.sol_score)},
          {"compile_known", row.compile_known},
          {"best_of", optional_json(row.best_of)},
          {"best_of_measured", row.best_of_measured},
          {"speedup_vs_best_of", optional_json(row.speedup_vs_best_of)},
          {"eager_range", row.eager_range ? row.eager_range->to_json() : nlohmann::json()},
          {"evaluations", row.evaluations},
          {"tokens", row.tokens},
          {"cost_usd", optional_json(row.cost_usd)},
          {"seconds", optional_json(row.seconds)},
          {"first_choice",
           row.first_choice.empty() ? nlohmann::json() : nlohmann::json(row.first_choice)},
          {"best_technique",
           row.best_technique.empty() ? nlohmann::json() : nlohmann::json(row.best_technique)},
          {"backend", row.backend},
          {"hardware", row.hardware},
          {"policy", string_or(row.tolerance, "policy")},
          {"run_id", row.run_id},
          {"run_dir", row.run_dir},
          {"trajectory", row.trajectory},
          {"states", states_json(row.states)},
          {"failures", failures_json(row.failures)}};
}

nlohmann::json techniques_json(const TechniqueStats& stats) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : stats.rows) {
    rows.push_back({{"state", s.state},
                    {"technique", s.technique},
                    {"tries", s.tries},
                    {"correct", s.correct},
                    {"improved", s.wins},
                    {"win_rate", s.win_rate()}});
  }
  return {{"scope", stats.scope}, {"kbs", stats.kbs}, {"rows", rows}, {"notes", stats.notes}};
}

}  // namespace

nlohmann::json to_json(const Report& report, const Metrics& m, const TechniqueStats& stats,
                       const Comparison* against) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : report.rows) rows.push_back(row_json(row));
  nlohmann::json out = {
      {"dir", report.dir.string()},
      {"kind", report.kind},
      {"batch", report.batch},
      {"problems", m.problems},
      {"ran", m.ran},
      {"not_run", m.not_run},
      {"unfinished", m.unfinished},
      {"correct", m.correct},
      {"correctness_rate", m.correctness_rate},
      {"vs_eager", speedup_json(m.vs_eager)},
      {"vs_compile", speedup_json(m.vs_compile)},
      {"vs_best_of", speedup_json(m.vs_best_of)},
      {"best_of_geomean", optional_json(m.best_of_geomean)},
      {"sol_score_median", optional_json(m.sol_score_median)},
      {"sol_scored", m.sol_scored},
      {"precision",
       {{"policies", m.policies},
        {"tolerances", m.tolerances},
        {"widened_by_eager", m.widened_by_eager}}},
      {"first_choice", {{"runs", m.first_choice_runs}, {"won", m.first_choice_won}}},
      {"hardware", m.hardware},
      {"backends", m.backends},
      {"speedup_baselines", m.baselines},
      {"totals",
       {{"evaluations", m.evaluations},
        {"tokens", m.tokens},
        {"cost_usd", optional_json(m.cost_usd)},
        {"seconds", m.seconds}}},
      {"rows", rows},
      {"techniques", techniques_json(stats)},
      {"failure_causes", causes_json(failure_causes(report.rows))},
      {"warnings", report.warnings}};
  if (against) out["comparison"] = comparison_json(*against);
  return out;
}

}  // namespace mblast::report
