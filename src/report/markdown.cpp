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
  if (const std::string ranges = eager_ranges_text(report, kEagerRangeShown); !ranges.empty())
    out << "\n" << ranges << "\n";

  if (const TextTable states = states_table(report); !states.rows.empty()) {
    out << "\n## States\n\n";
    markdown_table(out, states);
  }
  if (const TextTable failures = failures_table(report, kFailureCausesShown);
      !failures.rows.empty()) {
    out << "\n## Failed steps, by cause\n\n";
    markdown_table(out, failures);
  }

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
