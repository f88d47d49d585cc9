// A batch directory: batch.json (the problems), results.jsonl (finished runs), runs/ and
// baselines.jsonl (the controls judged in the same batch).
#include <algorithm>
#include <optional>
#include <set>

#include "mblast/error.hpp"
#include "report/json_util.hpp"
#include "report/load_support.hpp"

namespace mblast::report {

namespace fs = std::filesystem;

namespace {

// The run folder of a results.jsonl line: its run_dir when it exists here, else under runs/.
fs::path resolve_run_dir(const fs::path& batch_dir, const nlohmann::json& line) {
  std::error_code ec;
  const std::string recorded = string_or(line, "run_dir");
  std::vector<fs::path> candidates;
  if (!recorded.empty()) {
    fs::path path(recorded);
    candidates.push_back(path.is_relative() ? batch_dir / path : path);
    candidates.push_back(batch_dir / "runs" / path.filename());
  }
  const std::string problem = string_or(line, "problem");
  if (!problem.empty()) candidates.push_back(batch_dir / "runs" / problem_stem(problem));
  for (const auto& candidate : candidates) {
    if (!candidate.filename().empty() && fs::is_directory(candidate, ec)) return candidate;
  }
  return {};
}

std::string canonical_text(const fs::path& path) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? path.string() : canonical.string();
}

// The problem names batch.json lists: strings, or objects with a name, problem, file or path.
std::vector<std::string> listed_problems(const nlohmann::json& batch) {
  std::vector<std::string> names;
  if (!batch.is_object() || !batch.contains("problems") || !batch["problems"].is_array()) {
    return names;
  }
  for (const auto& entry : batch["problems"]) {
    if (entry.is_string()) {
      names.push_back(entry.get<std::string>());
      continue;
    }
    for (const char* key : {"name", "problem", "file", "path"}) {
      if (!string_or(entry, key).empty()) {
        names.push_back(string_or(entry, key));
        break;
      }
    }
  }
  return names;
}

// A listed problem without a run; scripts/run_kernelbench.sh lists file stems, and a run's task
// of a KernelBench file is "levelN/stem".
ProblemRow not_run(const std::string& listed, const nlohmann::json& batch) {
  ProblemRow row;
  row.name = problem_stem(listed);
  row.task = task_of(listed);
  if (listed.find('/') == std::string::npos) {
    const auto level = batch.is_object() ? batch.value("level", nlohmann::json()) : nullptr;
    if (level.is_number_integer()) {
      row.task = "level" + std::to_string(level.get<std::int64_t>()) + "/" + row.name;
    } else if (level.is_string()) {
      row.task = "level" + level.get<std::string>() + "/" + row.name;
    }
  }
  row.status = "not run";
  return row;
}

class Collected {
 public:
  explicit Collected(std::vector<std::string>& warnings) : warnings_(warnings) {}

  void add(LoadedRun run) {
    if (!run.row.run_dir.empty()) dirs_.insert(canonical_text(run.row.run_dir));
    if (!run.row.run_id.empty()) ids_.insert(run.row.run_id);
    for (auto& earlier : runs_) {
      if (earlier.row.name == run.row.name && earlier.row.task == run.row.task) {
        warnings_.push_back("results for " + run.row.task +
                            " appear more than once; the last one counts");
        earlier = std::move(run);
        return;
      }
    }
    runs_.push_back(std::move(run));
  }
  bool covers(const fs::path& dir, const std::string& run_id) const {
    return dirs_.count(canonical_text(dir)) || (!run_id.empty() && ids_.count(run_id));
  }
  // Removes and returns the run known by `listed` (its path, stem or task), if any.
  std::optional<ProblemRow> take(const std::string& listed) {
    const std::string keys[] = {listed, problem_stem(listed), task_of(listed)};
    for (auto it = runs_.begin(); it != runs_.end(); ++it) {
      for (const auto& key : keys) {
        if (!key.empty() && it->aliases.count(key)) {
          ProblemRow row = std::move(it->row);
          runs_.erase(it);
          return row;
        }
      }
    }
    return std::nullopt;
  }
  std::vector<ProblemRow> rest() {
    std::vector<ProblemRow> rows;
    for (auto& run : runs_) rows.push_back(std::move(run.row));
    std::stable_sort(rows.begin(), rows.end(), [](const ProblemRow& a, const ProblemRow& b) {
      return natural_less(a.task, b.task);
    });
    runs_.clear();
    return rows;
  }

 private:
  std::vector<std::string>& warnings_;
  std::vector<LoadedRun> runs_;
  std::set<std::string> dirs_, ids_;
};

void add_run_folders(const fs::path& runs, Collected& collected,
                     std::vector<std::string>& warnings) {
  std::error_code ec;
  if (!fs::is_directory(runs, ec)) return;
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(runs, ec)) {
    if (entry.is_directory(ec)) folders.push_back(entry.path());
  }
  std::sort(folders.begin(), folders.end());
  for (const auto& folder : folders) {
    if (!fs::is_regular_file(folder / "run.json") && !fs::is_regular_file(folder / "config.json")) {
      continue;
    }
    if (collected.covers(folder, "")) continue;
    LoadedRun run;
    try {
      run = load_run_dir(folder, warnings);
    } catch (const Error& e) {
      warnings.push_back(std::string(e.what()) + "; that run is left out");
      continue;
    }
    if (collected.covers(folder, run.row.run_id)) continue;
    run.aliases.insert(folder.filename().string());
    collected.add(std::move(run));
  }
}

}  // namespace

Report load_batch(const fs::path& dir) {
  Report report;
  report.dir = dir;
  report.kind = "batch";
  if (fs::is_regular_file(dir / "batch.json")) report.batch = read_json_file(dir / "batch.json");
  Collected collected(report.warnings);
  if (fs::is_regular_file(dir / "results.jsonl")) {
    for (const auto& line : read_json_lines(dir / "results.jsonl", report.warnings)) {
      const fs::path run_dir = resolve_run_dir(dir, line);
      collected.add(row_from_run(line, run_dir, report.warnings));
    }
  }
  add_run_folders(dir / "runs", collected, report.warnings);
  for (const auto& listed : listed_problems(report.batch)) {
    auto row = collected.take(listed);
    report.rows.push_back(row ? std::move(*row) : not_run(listed, report.batch));
  }
  for (auto& row : collected.rest()) report.rows.push_back(std::move(row));
  add_best_of(dir / "baselines.jsonl", report.rows, report.warnings);
  return report;
}

}  // namespace mblast::report
