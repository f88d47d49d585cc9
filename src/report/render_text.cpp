#include "report/render_text.hpp"

#include <cstdio>
#include <ostream>

#include "report/json_util.hpp"

namespace mblast::report {

namespace {

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace

void markdown_table(std::ostream& out, const std::vector<std::string>& headers,
                    const std::vector<std::vector<std::string>>& rows,
                    const std::vector<bool>& right) {
  out << "|";
  for (const auto& h : headers) out << " " << markdown_cell(h) << " |";
  out << "\n|";
  for (std::size_t i = 0; i < headers.size(); ++i) out << (right[i] ? "---:|" : "---|");
  out << "\n";
  for (const auto& row : rows) {
    out << "|";
    for (const auto& c : row) out << " " << markdown_cell(c) << " |";
    out << "\n";
  }
}

std::string summary_text(const Report& report, const Metrics& m) {
  if (report.kind == "run" && report.rows.size() == 1) {
    const auto& row = report.rows.front();
    return "Run of " + row.task + " (" + row.status + ")";
  }
  std::string text =
      "Batch of " + std::to_string(m.problems) + " problems: " + std::to_string(m.ran) + " run";
  if (m.unfinished) text += ", " + std::to_string(m.unfinished) + " unfinished";
  if (m.not_run) text += ", " + std::to_string(m.not_run) + " not run";
  if (report.batch.is_object() && report.batch.contains("level")) {
    const auto& level = report.batch["level"];
    text += " (level " + (level.is_string() ? level.get<std::string>() : level.dump()) + ")";
  }
  return text;
}

std::string counts_text(const std::map<std::string, std::int64_t>& counts) {
  std::string text;
  for (const auto& [name, n] : counts) {
    text += (text.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
  }
  return text.empty() ? "-" : text;
}

std::string precision_text(const Metrics& m) {
  std::string text = counts_text(m.policies);
  for (const auto& t : m.tolerances) {
    const auto atol = number_or_null(t, "atol");
    const auto rtol = number_or_null(t, "rtol");
    text += "; atol " + (atol ? short_number(*atol, 3) : "-") + ", rtol " +
            (rtol ? short_number(*rtol, 3) : "-") + " (" +
            std::to_string(t.value("problems", std::int64_t{0})) + ")";
  }
  if (m.widened_by_eager) {
    text += "; " + std::to_string(m.widened_by_eager) + " widened to eager's own error";
  }
  return text;
}

namespace {

std::string count_of(std::int64_t part, std::int64_t whole) {
  if (whole == 0) return "-";
  return std::to_string(part) + " (" +
         percent_text(static_cast<double>(part) / static_cast<double>(whole)) + ")";
}

std::string cost_text(const std::optional<double>& cost) {
  if (!cost) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "$%.2f", *cost);
  return buffer;
}

}  // namespace

std::vector<MetricLine> metric_lines(const Metrics& m) {
  const auto& e = m.vs_eager;
  const auto& c = m.vs_compile;
  std::vector<MetricLine> lines;
  lines.push_back({"problems", std::to_string(e.problems),
                   std::to_string(c.problems) + " with a torch.compile time"});
  lines.push_back({"correct", count_of(m.correct, m.problems), count_of(c.correct, c.problems)});
  for (const char* name : {"fast_0", "fast_1", "fast_1.5", "fast_2"}) {
    lines.push_back({name, percent_text(e.fast_p.at(name)),
                     c.problems ? percent_text(c.fast_p.at(name)) : "-"});
  }
  lines.push_back({"geomean speedup (correct)", speedup_text(e.geomean), speedup_text(c.geomean)});
  if (m.first_choice_runs) {
    lines.push_back(
        {"first choice was the winner", count_of(m.first_choice_won, m.first_choice_runs), "-"});
  }
  if (m.sol_score_median) {
    // SOL-ExecBench's score, with eager as its baseline time.
    char median[32];
    std::snprintf(median, sizeof median, "%.3f", *m.sol_score_median);
    lines.push_back(
        {"SOL score median (" + std::to_string(m.sol_scored) + " correct)", median, "-"});
  }
  return lines;
}

bool shows_best_of(const Metrics& m) { return m.vs_best_of.problems > 0; }

std::string best_of_text(const Metrics& m) {
  if (!shows_best_of(m)) return "";
  const auto& b = m.vs_best_of;
  return "vs best-of (per problem the fastest of eager and its correct controls, judged in this "
         "batch; known for " +
         std::to_string(b.problems) + " of " + std::to_string(m.problems) + " problems): fast_1 " +
         percent_text(b.fast_p.at("fast_1")) + ", fast_1.5 " +
         percent_text(b.fast_p.at("fast_1.5")) + ", geomean " + speedup_text(b.geomean) +
         "; mblast geomean over eager " + speedup_text(m.vs_eager.geomean) +
         " (correct problems) beside best-of geomean over eager " +
         speedup_text(m.best_of_geomean) + " (" + std::to_string(b.problems) + " problems)";
}

std::vector<std::string> problem_headers(const Metrics& m) {
  std::vector<std::string> headers = {"task", "status", "correct", "vs " + m.vs_eager.baseline,
                                      "vs compile"};
  if (shows_best_of(m)) headers.push_back("best-of");
  if (m.sol_scored > 0) headers.push_back("SOL score");
  headers.insert(headers.end(), {"evals", "tokens", "cost", "best technique"});
  return headers;
}

std::vector<std::string> problem_cells(const ProblemRow& row, const Metrics& m) {
  std::string vs_compile = speedup_text(row.speedup_vs_compile);
  if (row.correct && !row.speedup_vs_compile && !row.compile_known) vs_compile = "n/a";
  std::vector<std::string> cells = {row.task, row.status, row.correct ? "yes" : "no",
                                    speedup_text(row.speedup), vs_compile};
  if (shows_best_of(m)) cells.push_back(speedup_text(row.best_of));
  if (m.sol_scored > 0) {
    char score[32] = "-";
    if (row.sol_score) std::snprintf(score, sizeof score, "%.3f", *row.sol_score);
    cells.push_back(score);
  }
  const bool ran = row.status != "not run";
  cells.insert(cells.end(),
               {ran ? std::to_string(row.evaluations) : "-", ran ? std::to_string(row.tokens) : "-",
                cost_text(row.cost_usd), row.best_technique.empty() ? "-" : row.best_technique});
  return cells;
}

bool numeric_column(std::size_t index, std::size_t columns) {
  return index >= 3 && index + 1 < columns;
}

void markdown_table(std::ostream& out, const TextTable& table) {
  markdown_table(out, table.headers, table.rows, table.right);
  if (!table.more.empty()) out << "\n" << table.more << "\n";
}

TextTable states_table(const Report& report) {
  bool profiled_with_ncu = false;
  for (const auto& row : report.rows) {
    for (const auto& v : row.states)
      profiled_with_ncu = profiled_with_ncu || v.ncu_state || !v.ncu_evidence.empty();
  }
  TextTable table{
      {"problem", "backend", "state", "steps", "first step", "evidence at the first step"},
      {},
      {false, false, false, true, true, false},
      {}};
  if (profiled_with_ncu) {
    table.headers.insert(table.headers.end(), {"state Nsight Compute implies", "its numbers"});
    table.right.insert(table.right.end(), {false, false});
  }
  for (const auto& row : report.rows) {
    for (const auto& v : row.states) {
      table.rows.push_back({row.name, row.backend, v.state, std::to_string(v.steps),
                            std::to_string(v.first_step), v.evidence});
      if (profiled_with_ncu) {
        table.rows.back().push_back(v.ncu_state.value_or("-"));
        table.rows.back().push_back(v.ncu_evidence);
      }
    }
  }
  return table;
}

TextTable failures_table(const Report& report, std::size_t most) {
  const std::vector<FailureCause> causes = failure_causes(report.rows);
  TextTable table{{"outcome", "cause", "steps", "problems", "techniques"},
                  {},
                  {false, false, true, false, false},
                  {}};
  const auto joined = [](const auto& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  for (std::size_t i = 0; i < causes.size() && i < most; ++i) {
    const FailureCause& c = causes[i];
    table.rows.push_back(
        {c.outcome, c.cause, std::to_string(c.steps), joined(c.problems), joined(c.techniques)});
  }
  if (causes.size() > most) {
    table.more = std::to_string(causes.size() - most) +
                 " more causes in `mblast report --json` (failure_causes).";
  }
  return table;
}

// Each evaluation times eager in its own process, and every speedup is over that eager: where it
// differed between a run's evaluations, the speedups carry the difference.
std::string eager_ranges_text(const Report& report, double above) {
  std::string listed;
  std::size_t count = 0;
  for (const auto& row : report.rows) {
    if (!row.eager_range || row.eager_range->ratio() <= above) continue;
    const EagerRange& e = *row.eager_range;
    listed += std::string(count++ ? ", " : "") + row.name + " " + short_number(e.min_ms, 4) + "-" +
              short_number(e.max_ms, 4) + " ms over " + std::to_string(e.evaluations);
  }
  if (count == 0) return {};
  return "Eager's time differed by more than " + short_number((above - 1) * 100, 3) +
         " % between the evaluations of " + std::to_string(count) +
         (count == 1 ? " problem" : " problems") +
         " (each speedup is over the eager timed in its own evaluation): " + listed + ".";
}

}  // namespace mblast::report
