#pragma once
// The words and cells the Markdown and HTML renderings share.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "mblast/report.hpp"

namespace mblast::report {

// A Markdown table; `right` marks the right-aligned (numeric) columns.
void markdown_table(std::ostream& out, const std::vector<std::string>& headers,
                    const std::vector<std::vector<std::string>>& rows,
                    const std::vector<bool>& right);

// "Batch of 4 problems: 3 run, 1 not run" / "Run of level1/19_ReLU (finished)".
std::string summary_text(const Report& report, const Metrics& metrics);
// "a (3), b (1)"; "-" when empty.
std::string counts_text(const std::map<std::string, std::int64_t>& counts);
// "eager-widened (3); atol 0.0001, rtol 0.0001 (3); 0 widened by eager's own error".
std::string precision_text(const Metrics& metrics);

// The metrics table: a name, the value against the run's baseline, against torch.compile.
struct MetricLine {
  std::string name, vs_eager, vs_compile;
};
std::vector<MetricLine> metric_lines(const Metrics& metrics);

// Whether any problem's best-of (baselines.jsonl) is known.
bool shows_best_of(const Metrics& metrics);
// The metrics against each problem's best-of, beside the best-of's own level over eager; empty
// when no best-of is known.
std::string best_of_text(const Metrics& metrics);

// The per-problem table; a "best-of" column when shows_best_of.
std::vector<std::string> problem_headers(const Metrics& metrics);
std::vector<std::string> problem_cells(const ProblemRow& row, const Metrics& metrics);
// Which of the table's `columns` hold numbers (right-aligned): all but the first three and the
// last.
bool numeric_column(std::size_t index, std::size_t columns);

// Problems whose eager times, over the evaluations of their run, lie further apart than this are
// listed under the problems table.
constexpr double kEagerRangeShown = 1.2;
// The failure causes a rendering lists; --json has them all.
constexpr std::size_t kFailureCausesShown = 10;

// A table both renderings print: its headers, cells, and which columns hold numbers.
struct TextTable {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right;
  std::string more;  // a line under the table for what it left out; empty when nothing
};
void markdown_table(std::ostream& out, const TextTable& table);

// Each problem's states, in the order its steps reached them, with the evidence of the first (and
// Nsight Compute's state where a run was profiled with it); no rows when no state was recorded.
TextTable states_table(const Report& report);
// Failed steps by cause, the most frequent first: one cause across several problems is more
// likely the judge's or the environment's than the candidates'. `more` names the --json field.
TextTable failures_table(const Report& report, std::size_t most);
// The problems whose eager time differed by more than `above` (a ratio) between the evaluations
// of their run, in a sentence; empty when none did.
std::string eager_ranges_text(const Report& report, double above);

}  // namespace mblast::report
