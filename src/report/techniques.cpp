// Technique win rates per (state, technique) from the KB's attempts.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/report.hpp"
#include "report/json_util.hpp"

namespace mblast::report {

namespace fs = std::filesystem;

namespace {

using ArmMap = std::map<std::pair<std::string, std::string>, TechniqueStat>;

// Counts the attempts that end a step (they carry the step's reward; fix attempts before them
// carry none), optionally only those of `run_ids`.
void count_attempts(const nlohmann::json& attempts, const std::set<std::string>* run_ids,
                    ArmMap& arms) {
  for (const auto& attempt : attempts) {
    if (run_ids && !run_ids->count(string_or(attempt, "run_id"))) continue;
    const auto reward = number_or_null(attempt, "reward");
    if (!reward) continue;
    const std::string state = string_or(attempt, "state_id", "(no state)");
    const std::string technique = string_or(attempt, "technique_id", "(no technique)");
    TechniqueStat& stat = arms[{state, technique}];
    stat.state = state;
    stat.technique = technique;
    ++stat.tries;
    const bool correct = string_or(attempt, "outcome") == "correct";
    if (correct) ++stat.correct;
    if (correct && *reward > 0) ++stat.wins;
  }
}

nlohmann::json attempts_of(const KnowledgeBase& kb, const std::string& task) {
  KbQuery query;
  query.kind = "attempts";
  query.task = task;
  query.limit = std::numeric_limits<std::int64_t>::max();
  return kb.query(query);
}

KnowledgeBase open_read_only(const fs::path& path) {
  KnowledgeBase::Options options;
  options.read_only = true;
  return KnowledgeBase(path, options);
}

void from_runs(const Report& report, TechniqueStats& stats, ArmMap& arms) {
  // KB file -> (run ids, tasks) of the report's runs that wrote to it.
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> by_kb;
  std::int64_t without_kb = 0;
  for (const auto& row : report.rows) {
    if (row.run_id.empty()) continue;
    if (row.kb.empty()) {
      ++without_kb;
      continue;
    }
    by_kb[row.kb].first.insert(row.run_id);
    by_kb[row.kb].second.insert(row.task);
  }
  if (without_kb) {
    stats.notes.push_back(std::to_string(without_kb) + " run(s) name no KB; pass --kb PATH");
  }
  for (const auto& [path, runs] : by_kb) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      stats.notes.push_back("the KB " + path + " is not here; pass --kb PATH to read another");
      continue;
    }
    try {
      const KnowledgeBase kb = open_read_only(path);
      for (const auto& task : runs.second) count_attempts(attempts_of(kb, task), &runs.first, arms);
      stats.kbs.push_back(path);
    } catch (const Error& e) {
      stats.notes.push_back("the KB " + path + " could not be read: " + e.what());
    }
  }
}

}  // namespace

TechniqueStats technique_stats(const Report& report, const std::optional<fs::path>& kb) {
  TechniqueStats stats;
  ArmMap arms;
  if (kb) {
    stats.scope = "kb";
    const KnowledgeBase base = open_read_only(*kb);
    count_attempts(attempts_of(base, ""), nullptr, arms);
    stats.kbs.push_back(kb->string());
  } else {
    stats.scope = "runs";
    from_runs(report, stats, arms);
  }
  for (auto& [arm, stat] : arms) stats.rows.push_back(std::move(stat));
  std::stable_sort(
      stats.rows.begin(), stats.rows.end(),
      [](const TechniqueStat& a, const TechniqueStat& b) { return a.tries > b.tries; });
  return stats;
}

}  // namespace mblast::report
