// `mblast report`: Markdown on the terminal.
#include <algorithm>
#include <sstream>

#include "mblast/report.hpp"
#include "report/compare_render.hpp"
#include "report/json_util.hpp"
#include "report/render_text.hpp"

namespace mblast::report {

namespace {

constexpr std::size_t kTechniqueLines = 10;
constexpr std::size_t kFailureLines = 10;
// Problems whose eager times, over the evaluations of their run, lie further apart than this are
// listed under the problems table.
constexpr double kEagerRangeShown = 1.2;

// Each problem's states, in the order its steps reached them, with the evidence of the first.
void write_states(std::ostream& out, const Report& report) {
  bool profiled_with_ncu = false;
  for (const auto& row : report.rows) {
    for (const auto& v : row.states)
      profiled_with_ncu = profiled_with_ncu || v.ncu_state || !v.ncu_evidence.empty();
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : report.rows) {
    for (const auto& v : row.states) {
      rows.push_back({row.name, row.backend, v.state, std::to_string(v.steps),
                      std::to_string(v.first_step), v.evidence});
      if (profiled_with_ncu) {
        rows.back().push_back(v.ncu_state.value_or("-"));
        rows.back().push_back(v.ncu_evidence);
      }
    }
  }
  if (rows.empty()) return;
  out << "\n## States\n\n";
  std::vector<std::string> headers = {"problem", "backend",    "state",
                                      "steps",   "first step", "evidence at the first step"};
  std::vector<bool> right = {false, false, false, true, true, false};
  if (profiled_with_ncu) {
    headers.insert(headers.end(), {"state Nsight Compute implies", "its numbers"});
    right.insert(right.end(), {false, false});
  }
  markdown_table(out, headers, rows, right);
}

// Failed steps by cause: one cause across several problems is more likely the judge's or the
// environment's than the candidates'.
void write_failures(std::ostream& out, const Report& report) {
  const std::vector<FailureCause> causes = failure_causes(report.rows);
  if (causes.empty()) return;
  out << "\n## Failed steps, by cause\n\n";
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < causes.size() && i < kFailureLines; ++i) {
    const FailureCause& c = causes[i];
    std::string problems;
    for (const auto& name : c.problems) problems += (problems.empty() ? "" : ", ") + name;
    std::string techniques;
    for (const auto& t : c.techniques) techniques += (techniques.empty() ? "" : ", ") + t;
    rows.push_back({c.outcome, c.cause, std::to_string(c.steps), problems, techniques});
  }
  markdown_table(out, {"outcome", "cause", "steps", "problems", "techniques"}, rows,
                 {false, false, true, false, false});
  if (causes.size() > kFailureLines) {
    out << "\n" << causes.size() - kFailureLines << " more causes in `mblast report --json`.\n";
  }
}

// Each evaluation times eager in its own process, and every speedup is over that eager: where it
// differed between a run's evaluations, the speedups carry the difference.
void write_eager_ranges(std::ostream& out, const Report& report) {
  std::string listed;
  std::size_t count = 0;
  for (const auto& row : report.rows) {
    if (!row.eager_range || row.eager_range->ratio() <= kEagerRangeShown) continue;
    const EagerRange& e = *row.eager_range;
    listed += std::string(count++ ? ", " : "") + row.name + " " + short_number(e.min_ms, 4) + "-" +
              short_number(e.max_ms, 4) + " ms over " + std::to_string(e.evaluations);
  }
  if (count == 0) return;
  out << "\nEager's time differed by more than " << short_number((kEagerRangeShown - 1) * 100, 3)
      << " % between the evaluations of " << count << (count == 1 ? " problem" : " problems")
      << " (each speedup is over the eager timed in its own evaluation): " << listed << ".\n";
}

}  // namespace

std::string to_markdown(const Report& report, const Metrics& m, const TechniqueStats& stats,
                        const Comparison* against) {
  std::ostringstream out;
  out << "# mblast report: " << report.dir.string() << "\n\n"
      << summary_text(report, m) << "\n\n"
      << "- hardware: " << counts_text(m.hardware) << "\n"
      << "- backend: " << counts_text(m.backends) << "\n"
      << "- precision: " << precision_text(m) << "\n"
      << "- speedups over: " << counts_text(m.baselines) << "; torch.compile time known for "
      << m.vs_compile.problems << " of " << m.problems << " problems\n"
      << "- evaluations " << m.evaluations << ", tokens " << m.tokens << ", cost "
      << (m.cost_usd ? "$" + short_number(*m.cost_usd, 4) : std::string("-")) << "\n\n";

  out << "## KernelBench metrics\n\n";
  std::vector<std::vector<std::string>> lines;
  for (const auto& line : metric_lines(m))
    lines.push_back({line.name, line.vs_eager, line.vs_compile});
  markdown_table(out, {"metric", "vs " + m.vs_eager.baseline, "vs torch.compile"}, lines,
                 {false, true, true});
  if (shows_best_of(m)) out << "\n" << best_of_text(m) << "\n";

  out << "\n## Problems\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : report.rows) rows.push_back(problem_cells(row, m));
  const auto headers = problem_headers(m);
  std::vector<bool> right;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    right.push_back(numeric_column(i, headers.size()));
  }
  markdown_table(out, headers, rows, right);
  write_eager_ranges(out, report);

  write_states(out, report);
  write_failures(out, report);

  out << "\n## Techniques (" << (stats.scope == "kb" ? "whole KB" : "these runs") << ")\n\n";
  if (stats.rows.empty()) {
    out << "No attempts found.\n";
  } else {
    std::vector<std::vector<std::string>> arms;
    for (std::size_t i = 0; i < stats.rows.size() && i < kTechniqueLines; ++i) {
      const auto& s = stats.rows[i];
      arms.push_back({s.state, s.technique, std::to_string(s.tries), std::to_string(s.correct),
                      std::to_string(s.wins), percent_text(s.win_rate())});
    }
    markdown_table(out, {"state", "technique", "tries", "correct", "improved", "win rate"}, arms,
                   {false, false, true, true, true, true});
    if (stats.rows.size() > kTechniqueLines) {
      out << "\n"
          << stats.rows.size() - kTechniqueLines
          << " more in `mblast report --json` and `--html`.\n";
    }
  }
  if (against) write_comparison_markdown(out, *against);
  std::vector<std::string> notes = stats.notes;
  notes.insert(notes.end(), report.warnings.begin(), report.warnings.end());
  if (!notes.empty()) {
    out << "\n## Notes\n\n";
    for (const auto& note : notes) out << "- " << note << "\n";
  }
  return out.str();
}

}  // namespace mblast::report
