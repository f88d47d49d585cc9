// `mblast report --html FILE`: one self-contained page (inline CSS and SVG, no scripts).
#include <sstream>

#include "mblast/report.hpp"
#include "report/json_util.hpp"
#include "report/plots.hpp"
#include "report/render_text.hpp"
#include "report/svg.hpp"

namespace mblast::report {

namespace {

constexpr const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;
max-width:840px;margin:24px auto;padding:0 16px;line-height:1.45}
h1{font-size:24px;margin-bottom:2px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;
padding-bottom:4px}.dir{color:#666;font-family:ui-monospace,Menlo,monospace;font-size:13px;
margin-top:0;word-break:break-all}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}.card{border:1px solid #ddd;
border-radius:6px;padding:8px 14px;min-width:150px}.card b{display:block;font-size:24px}
.card span{color:#666;font-size:13px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;font-size:14px}dt{color:#666}
dd{margin:0}table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{padding:4px 8px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}
th{background:#f5f5f5}.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.yes{color:#1b7a34;font-weight:600}.no{color:#b3261e}.scroll{overflow-x:auto}
figure{margin:18px 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:13px;color:#555}ul.notes{font-size:13px;color:#555}
)";

std::string h(const std::string& text) { return svg::escape(text); }

void card(std::ostream& out, const std::string& value, const std::string& label) {
  out << "<div class=\"card\"><b>" << h(value) << "</b><span>" << h(label) << "</span></div>\n";
}

void figure(std::ostream& out, const std::string& svg, const std::string& caption) {
  out << "<figure>\n" << svg << "<figcaption>" << h(caption) << "</figcaption>\n</figure>\n";
}

void metrics_table(std::ostream& out, const Metrics& m) {
  out << "<table><tr><th>metric</th><th class=\"n\">vs " << h(m.vs_eager.baseline)
      << "</th><th class=\"n\">vs torch.compile</th></tr>\n";
  for (const auto& line : metric_lines(m)) {
    out << "<tr><td>" << h(line.name) << "</td><td class=\"n\">" << h(line.vs_eager)
        << "</td><td class=\"n\">" << h(line.vs_compile) << "</td></tr>\n";
  }
  out << "</table>\n";
  if (shows_best_of(m)) out << "<p>" << h(best_of_text(m)) << "</p>\n";
}

void problems_table(std::ostream& out, const Report& report, const Metrics& m) {
  out << "<div class=\"scroll\"><table><tr>";
  const auto headers = problem_headers(m);
  for (std::size_t i = 0; i < headers.size(); ++i) {
    out << "<th" << (numeric_column(i, headers.size()) ? " class=\"n\"" : "") << ">"
        << h(headers[i]) << "</th>";
  }
  out << "</tr>\n";
  for (const auto& row : report.rows) {
    const auto cells = problem_cells(row, m);
    out << "<tr>";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::string cls = numeric_column(i, cells.size()) ? "n" : "";
      if (i == 2) cls = row.correct ? "yes" : "no";
      out << "<td" << (cls.empty() ? "" : " class=\"" + cls + "\"") << ">" << h(cells[i])
          << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table></div>\n";
}

void html_table(std::ostream& out, const TextTable& table) {
  out << "<div class=\"scroll\"><table><tr>";
  for (std::size_t i = 0; i < table.headers.size(); ++i) {
    out << "<th" << (table.right[i] ? " class=\"n\"" : "") << ">" << h(table.headers[i]) << "</th>";
  }
  out << "</tr>\n";
  for (const auto& cells : table.rows) {
    out << "<tr>";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out << "<td" << (i < table.right.size() && table.right[i] ? " class=\"n\"" : "") << ">"
          << h(cells[i]) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table></div>\n";
  if (!table.more.empty()) out << "<p>" << h(table.more) << "</p>\n";
}

}  // namespace

std::string to_html(const Report& report, const Metrics& m, const TechniqueStats& stats,
                    const Comparison* against) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<title>mblast report: " << h(report.dir.string()) << "</title>\n<style>" << kStyle
      << "</style>\n</head>\n<body>\n<h1>mblast report</h1>\n<p class=\"dir\">"
      << h(report.dir.string()) << "</p>\n<p>" << h(summary_text(report, m)) << "</p>\n";

  out << "<div class=\"cards\">\n";
  card(out, percent_text(m.correctness_rate),
       "correct (" + std::to_string(m.correct) + " of " + std::to_string(m.problems) + ")");
  card(out, percent_text(m.vs_eager.fast_p.at("fast_1")), "fast_1 vs " + m.vs_eager.baseline);
  card(out, speedup_text(m.vs_eager.geomean), "geomean vs " + m.vs_eager.baseline);
  card(out, speedup_text(m.vs_compile.geomean),
       "geomean vs torch.compile (" + std::to_string(m.vs_compile.correct) + ")");
  if (m.sol_score_median) {
    card(out, short_number(*m.sol_score_median, 3),
         "SOL score median (" + std::to_string(m.sol_scored) + ")");
  }
  out << "</div>\n<dl>\n"
      << "<dt>hardware</dt><dd>" << h(counts_text(m.hardware)) << "</dd>\n"
      << "<dt>backend</dt><dd>" << h(counts_text(m.backends)) << "</dd>\n"
      << "<dt>precision</dt><dd>" << h(precision_text(m)) << "</dd>\n"
      << "<dt>speedups over</dt><dd>" << h(counts_text(m.baselines))
      << "; torch.compile time known for " << m.vs_compile.problems << " of " << m.problems
      << " problems</dd>\n"
      << "<dt>spent</dt><dd>" << m.evaluations << " evaluations, " << m.tokens << " tokens, "
      << h(m.cost_usd ? "$" + short_number(*m.cost_usd, 4) : std::string("no cost recorded"))
      << "</dd>\n</dl>\n";

  out << "<h2>KernelBench metrics</h2>\n";
  metrics_table(out, m);
  out << "<p style=\"font-size:13px;color:#555\">fast_p: the share of all problems that are "
         "correct and more than p times faster; a problem that did not run counts as not "
         "correct. The geometric mean is over the correct problems.</p>\n";

  out << "<h2>Plots</h2>\n";
  figure(out, plots::speedup_histogram(m),
         "(a) How the best speedups spread; the dashed line is 1x.");
  figure(out, plots::fast_p_curve(m), "(b) fast_p as the threshold p grows from 0 to 3.");
  figure(out, plots::speedup_per_evaluation(report.rows, m),
         "(c) How fast each run found its speedup.");
  figure(out, plots::technique_heatmap(stats),
         "(d) Which techniques paid off in which states, from the knowledge base.");
  if (against) {
    figure(out, plots::comparison_per_evaluation(*against),
           "(e) This report's runs beside " + against->other_dir.string() +
               "'s: how fast each side came to its speedups.");
  }

  out << "<h2>Problems</h2>\n";
  problems_table(out, report, m);
  if (const std::string ranges = eager_ranges_text(report, kEagerRangeShown); !ranges.empty())
    out << "<p>" << h(ranges) << "</p>\n";
  if (const TextTable states = states_table(report); !states.rows.empty()) {
    out << "<h2>States</h2>\n";
    html_table(out, states);
  }
  if (const TextTable failures = failures_table(report, kFailureCausesShown);
      !failures.rows.empty()) {
    out << "<h2>Failed steps, by cause</h2>\n";
    html_table(out, failures);
  }
  std::vector<std::string> notes = stats.notes;
  notes.insert(notes.end(), report.warnings.begin(), report.warnings.end());
  if (!notes.empty()) {
    out << "<h2>Notes</h2>\n<ul class=\"notes\">\n";
    for (const auto& note : notes) out << "<li>" << h(note) << "</li>\n";
    out << "</ul>\n";
  }
  out << "<p style=\"font-size:12px;color:#888\">Written by mblast " << MBLAST_VERSION
      << ".</p>\n</body>\n</html>\n";
  return out.str();
}

}  // namespace mblast::report
