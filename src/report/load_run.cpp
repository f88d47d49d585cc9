// One run directory (or one results.jsonl line) as a report row.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "mblast/error.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/step_record.hpp"
#include "report/json_util.hpp"
#include "report/load_support.hpp"

namespace mblast::report {

namespace fs = std::filesystem;

std::string problem_stem(const std::string& problem) { return fs::path(problem).stem().string(); }

std::string task_of(const std::string& problem) {
  const fs::path path(problem);
  const std::string folder = path.parent_path().filename().string();
  return (folder.empty() ? std::string() : folder + "/") + path.stem().string();
}

namespace {

// steps.jsonl once: what the trajectory, the states and the first choice are read from.
std::vector<StepRecord> read_steps(const fs::path& run_dir, std::vector<std::string>& warnings) {
  std::vector<StepRecord> steps;
  std::error_code ec;
  if (!fs::is_regular_file(run_dir / "steps.jsonl", ec)) return steps;
  for (const auto& line : read_json_lines(run_dir / "steps.jsonl", warnings)) {
    steps.push_back(StepRecord::from_json(line));
  }
  return steps;
}

std::vector<std::pair<double, double>> trajectory_of(const std::vector<StepRecord>& steps) {
  std::vector<std::pair<double, double>> points;
  double best = 0;
  for (const StepRecord& step : steps) {
    if (!step.best_speedup || *step.best_speedup <= 0 || step.evaluations_total <= 0) continue;
    best = std::max(best, *step.best_speedup);
    points.emplace_back(step.evaluations_total, best);
  }
  return points;
}

std::vector<StateVisit> states_of(const std::vector<StepRecord>& steps) {
  std::vector<StateVisit> states;
  for (const StepRecord& step : steps) {
    if (step.state.empty()) continue;
    auto visit = std::find_if(states.begin(), states.end(),
                              [&](const StateVisit& v) { return v.state == step.state; });
    if (visit == states.end()) {
      states.push_back({step.state, step.state_evidence, 0, step.global_step, step.ncu_state,
                        step.ncu_evidence});
      visit = std::prev(states.end());
    }
    ++visit->steps;
  }
  return states;
}

std::vector<FailedStep> failures_of(const std::vector<StepRecord>& steps) {
  std::vector<FailedStep> failed;
  for (const StepRecord& step : steps) {
    if (step.outcome == Outcome::correct || step.outcome == Outcome::skipped) continue;
    failed.push_back({step.global_step, step.technique, std::string(to_string(step.outcome)),
                      step.error.value_or("")});
  }
  return failed;
}

std::string first_choice_of(const std::vector<StepRecord>& steps) {
  std::string first;
  for (const StepRecord& step : steps) {
    if (step.technique.empty()) continue;
    if (step.decided_by == "ucb") return step.technique;
    if (first.empty() && step.decided_by.empty()) first = step.technique;
  }
  return first;
}

}  // namespace

LoadedRun row_from_run(const nlohmann::json& run, const fs::path& run_dir,
                       std::vector<std::string>& warnings) {
  LoadedRun loaded;
  ProblemRow& row = loaded.row;
  const std::string problem = string_or(run, "problem");
  row.task =
      string_or(run, "task", problem.empty() ? run_dir.filename().string() : task_of(problem));
  row.name = problem.empty() ? row.task : problem_stem(problem);
  row.status = string_or(run, "status", "unknown");
  row.ran = true;
  row.speedup = number_or_null(run, "best_speedup");
  const auto correct = run.find("correct");
  row.correct = correct != run.end() && correct->is_boolean() ? correct->get<bool>()
                                                              : row.speedup.has_value();
  if (!row.correct) row.speedup.reset();
  row.speedup_vs_compile = number_or_null(run, "speedup_vs_compile");
  if (!row.correct) row.speedup_vs_compile.reset();
  for (auto* speedup : {&row.speedup, &row.speedup_vs_compile}) {
    if (*speedup && !(std::isfinite(**speedup) && **speedup > 0)) {
      warnings.push_back(row.task + ": a speedup of " + std::to_string(**speedup) +
                         " is not a positive number; left out");
      speedup->reset();
    }
  }
  row.compile_known = number_or_null(run, "compile_ms") || row.speedup_vs_compile;
  if (row.correct) row.sol_score = number_or_null(run, "sol_score");
  row.speedup_baseline = string_or(run, "speedup_baseline", "eager");
  row.evaluations = integer_or(run, "evaluations");
  row.tokens = integer_or(run, "tokens");
  row.cost_usd = number_or_null(run, "cost_usd");
  row.seconds = number_or_null(run, "seconds");
  row.best_technique = string_or(run, "best_technique");
  row.backend = string_or(run, "backend");
  row.hardware = string_or(run, "hardware");
  row.run_id = string_or(run, "run_id");
  row.kb = string_or(run, "kb");
  row.tolerance = run.value("tolerance", nlohmann::json());
  if (const auto range = run.find("eager_range"); range != run.end())
    row.eager_range = EagerRange::from_json(*range);
  row.run_dir = run_dir.empty() ? string_or(run, "run_dir") : run_dir.string();
  if (!run_dir.empty()) {
    const std::vector<StepRecord> steps = read_steps(run_dir, warnings);
    row.trajectory = trajectory_of(steps);
    row.states = states_of(steps);
    row.failures = failures_of(steps);
    row.first_choice = first_choice_of(steps);
  }
  loaded.aliases = {row.name, row.task, problem_stem(row.task)};
  if (!problem.empty()) loaded.aliases.insert(problem);
  if (!run_dir.empty()) loaded.aliases.insert(run_dir.filename().string());
  return loaded;
}

namespace {

// A run that has not written run.json yet: what config.json and steps.jsonl say so far.
LoadedRun unfinished_run(const fs::path& dir, std::vector<std::string>& warnings) {
  nlohmann::json config = nlohmann::json::object();
  if (fs::is_regular_file(dir / "config.json")) config = read_json_file(dir / "config.json");
  const nlohmann::json options = config.value("options", nlohmann::json::object());
  nlohmann::json run = {
      {"status", "unfinished"},
      {"problem", string_or(options, "problem", dir.filename().string())},
      {"backend", string_or(options, "backend")},
      {"hardware", string_or(config, "hardware")},
      {"run_id", string_or(config, "run_id")},
      {"kb", string_or(options, "kb")},
      {"correct", false},
      {"tolerance",
       config.value("baseline", nlohmann::json::object()).value("tolerance", nlohmann::json())}};
  std::vector<nlohmann::json> steps;
  if (fs::is_regular_file(dir / "steps.jsonl"))
    steps = read_json_lines(dir / "steps.jsonl", warnings);
  if (!steps.empty()) {
    const StepRecord last = StepRecord::from_json(steps.back());
    run["evaluations"] = last.evaluations_total;
    run["tokens"] = last.tokens_total;
    run["cost_usd"] = optional_json(last.cost_total_usd);
  }
  LoadedRun loaded = row_from_run(run, dir, warnings);
  loaded.row.ran = false;
  warnings.push_back(dir.string() + " has no run.json yet (unfinished); counted as not correct");
  return loaded;
}

}  // namespace

LoadedRun load_run_dir(const fs::path& dir, std::vector<std::string>& warnings) {
  if (!fs::is_regular_file(dir / "run.json")) return unfinished_run(dir, warnings);
  const nlohmann::json run = read_json_file(dir / "run.json");
  if (!run.is_object()) {
    throw input_error((dir / "run.json").string() + " is not a JSON object",
                      "restore it from the run, or rerun the problem");
  }
  return row_from_run(run, dir, warnings);
}

namespace {

// A run of digits without its leading zeros ("007" -> "7", "0" -> "0").
std::string digits_without_zeros(const std::string& text, std::size_t begin, std::size_t end) {
  while (begin + 1 < end && text[begin] == '0') ++begin;
  return text.substr(begin, end - begin);
}

std::size_t digits_end(const std::string& text, std::size_t begin) {
  while (begin < text.size() && std::isdigit(static_cast<unsigned char>(text[begin]))) ++begin;
  return begin;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const auto ca = static_cast<unsigned char>(a[i]);
    const auto cb = static_cast<unsigned char>(b[j]);
    if (std::isdigit(ca) && std::isdigit(cb)) {
      const std::size_t ei = digits_end(a, i), ej = digits_end(b, j);
      const std::string na = digits_without_zeros(a, i, ei), nb = digits_without_zeros(b, j, ej);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (ca != cb) return ca < cb;
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace mblast::report
