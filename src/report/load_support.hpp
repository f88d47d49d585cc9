#pragma once
// Internals of load_report: one run directory, and a batch of them.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/report.hpp"

namespace mblast::report {

// A row and the names a batch may know it by (file stem, task, run folder).
struct LoadedRun {
  ProblemRow row;
  std::set<std::string> aliases;
};

// The stem of a problem path ("level1/19_ReLU.py" -> "19_ReLU").
std::string problem_stem(const std::string& problem);
// "folder/stem" as `mblast optimize` names tasks.
std::string task_of(const std::string& problem);

// A row from a run.json object; `run_dir` (may be empty) supplies steps.jsonl.
LoadedRun row_from_run(const nlohmann::json& run, const std::filesystem::path& run_dir,
                       std::vector<std::string>& warnings);
// A run directory: run.json when there, else "unfinished" from config.json and steps.jsonl.
LoadedRun load_run_dir(const std::filesystem::path& dir, std::vector<std::string>& warnings);

Report load_batch(const std::filesystem::path& dir);
// Sets each row's best-of from a batch's baselines.jsonl (nothing when the file is absent);
// lines without a task and baseline, and tasks that are not rows, are said in `warnings`.
void add_best_of(const std::filesystem::path& file, std::vector<ProblemRow>& rows,
                 std::vector<std::string>& warnings);

// "2_x" before "10_x": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace mblast::report
