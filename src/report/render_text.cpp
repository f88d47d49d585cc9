#include "report/render_text.hpp"

#include <cstdio>

#include "report/json_util.hpp"

namespace mblast::report {

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
  return lines;
}

std::vector<std::string> problem_headers(const Metrics& m) {
  return {"task",   "status", "correct",       "vs " + m.vs_eager.baseline, "vs compile", "evals",
          "tokens", "cost",   "best technique"};
}

std::vector<std::string> problem_cells(const ProblemRow& row) {
  std::string correct = row.correct ? "yes" : "no";
  std::string vs_compile = speedup_text(row.speedup_vs_compile);
  if (row.correct && !row.speedup_vs_compile && !row.compile_known) vs_compile = "n/a";
  const bool ran = row.status != "not run";
  return {row.task,
          row.status,
          correct,
          speedup_text(row.speedup),
          vs_compile,
          ran ? std::to_string(row.evaluations) : "-",
          ran ? std::to_string(row.tokens) : "-",
          cost_text(row.cost_usd),
          row.best_technique.empty() ? "-" : row.best_technique};
}

bool numeric_column(std::size_t index) { return index >= 3 && index <= 7; }

}  // namespace mblast::report
