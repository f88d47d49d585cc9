// A batch's baselines.jsonl: control implementations (CUDA graph, torch.compile, ...) judged in
// the same batch as mblast's runs. Per problem, the best of eager and its correct controls.
#include <algorithm>
#include <map>
#include <set>

#include "report/json_util.hpp"
#include "report/load_support.hpp"

namespace mblast::report {

namespace fs = std::filesystem;

namespace {

// A control's speedup over eager, when it was correct.
using Controls = std::map<std::string, std::optional<double>>;

std::optional<double> correct_speedup(const nlohmann::json& line) {
  const auto correct = line.find("correct");
  if (correct == line.end() || *correct != true) return std::nullopt;
  return number_or_null(line, "speedup");
}

std::map<std::string, Controls> read_controls(const fs::path& file,
                                              std::vector<std::string>& warnings) {
  std::map<std::string, Controls> by_task;
  for (const auto& line : read_json_lines(file, warnings)) {
    const std::string task = string_or(line, "task");
    const std::string baseline = string_or(line, "baseline");
    if (task.empty() || baseline.empty()) {
      warnings.push_back(file.string() +
                         ": a line without \"task\" and \"baseline\"; skipped: " + line.dump());
      continue;
    }
    if (!by_task[task].insert_or_assign(baseline, correct_speedup(line)).second) {
      warnings.push_back(file.string() + ": " + baseline + " for " + task +
                         " appears more than once; the last one counts");
    }
  }
  return by_task;
}

void set_best_of(ProblemRow& row, const Controls& controls) {
  double best = 1.0;  // eager itself
  row.best_of_measured.clear();
  for (const auto& [name, speedup] : controls) {
    row.best_of_measured.push_back(name);  // in the map's order: sorted
    if (speedup) best = std::max(best, *speedup);
  }
  row.best_of = best;
  if (row.correct && row.speedup) row.speedup_vs_best_of = *row.speedup / best;
}

void warn_unmatched(const fs::path& file, const std::map<std::string, Controls>& by_task,
                    const std::set<std::string>& matched, std::vector<std::string>& warnings) {
  std::string unmatched;
  for (const auto& [task, controls] : by_task) {
    if (!matched.count(task)) unmatched += (unmatched.empty() ? "" : ", ") + task;
  }
  if (!unmatched.empty()) {
    warnings.push_back(file.string() + " names tasks that are not in this batch (" + unmatched +
                       "); their controls are left out");
  }
}

}  // namespace

void add_best_of(const fs::path& file, std::vector<ProblemRow>& rows,
                 std::vector<std::string>& warnings) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return;
  const auto by_task = read_controls(file, warnings);
  std::set<std::string> matched;
  for (auto& row : rows) {
    const auto controls = by_task.find(row.task);
    if (controls == by_task.end()) continue;
    set_best_of(row, controls->second);
    matched.insert(row.task);
  }
  warn_unmatched(file, by_task, matched, warnings);
}

}  // namespace mblast::report
