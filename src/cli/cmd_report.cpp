// `mblast report DIR`: KernelBench metrics, the per-problem table and plots for a run or a batch.
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>

#include "cli/app.hpp"
#include "mblast/error.hpp"
#include "mblast/report.hpp"

namespace mblast::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kFooter = R"(
DIR is a run directory (mblast optimize --out DIR; it holds run.json) or a batch directory
(scripts/run_kernelbench.sh; it holds batch.json, results.jsonl and runs/). Problems that
batch.json lists without a finished run count as not correct.
Metrics follow KernelBench: correctness rate; fast_p, the share of ALL problems that are correct
and more than p times faster (p = 0, 1, 1.5, 2); the geometric-mean speedup over the correct
problems. Each against eager (a native backend's own baseline) and against torch.compile where
its time was measured. A batch's baselines.jsonl (controls such as cuda_graph and torch_compile
judged in the same batch) gives the best-of column: per problem the fastest of eager and its
correct controls, with the metrics against it.
Technique win rates come from the KB each run wrote to, over the attempts of these runs; with
--kb PATH, over every attempt in that KB.
--against OTHER matches the problems of DIR and OTHER by task (e.g. level1/19_ReLU) and shows,
per level and overall, how many evaluations each side needed to come within 5 % of its own final
best (the reference's evaluation counts as the first and holds 1.0x), the geometric mean of the
final bests and the wall, then the running best per evaluation on both sides
(benchmarks/transfer.sh compares runs from a filled KB against runs from an empty one).)";

struct ReportCommand {
  std::string dir;
  std::string html;
  std::string against;
  bool json = false;
};

void write_file(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (fs::is_directory(path)) {
    throw input_error(path.string() + " is a directory, not a file to write the page to",
                      "give --html a file name, e.g. --html " + (path / "report.html").string());
  }
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.good()) {
      fs::remove(partial, ec);
      throw input_error("cannot write " + path.string(), "give --html a writable path");
    }
  }
  fs::rename(partial, path, ec);
  if (ec) {
    fs::remove(partial, ec);
    throw input_error("cannot write " + path.string() + ": " + ec.message(),
                      "give --html a writable path");
  }
}

int run_report(const ReportCommand& command, const Globals& globals) {
  const report::Report loaded = report::load_report(command.dir);
  const report::Metrics metrics = report::compute_metrics(loaded.rows);
  std::optional<fs::path> kb;
  if (!globals.kb_path.empty()) kb = fs::path(globals.kb_path);
  const report::TechniqueStats stats = report::technique_stats(loaded, kb);
  std::optional<report::Comparison> comparison;
  if (!command.against.empty()) {
    comparison = report::compare_reports(loaded, report::load_report(command.against));
  }
  const report::Comparison* against = comparison ? &*comparison : nullptr;
  if (!command.html.empty()) {
    write_file(command.html, report::to_html(loaded, metrics, stats, against));
    spdlog::info("wrote the HTML report to {}", command.html);
  }
  if (command.json) {
    std::cout << report::to_json(loaded, metrics, stats, against).dump(2) << "\n";
  } else {
    std::cout << report::to_markdown(loaded, metrics, stats, against);
  }
  return 0;
}

}  // namespace

void register_report(CLI::App& app, Globals& globals, Action& action) {
  auto command = std::make_shared<ReportCommand>();
  auto* report = app.add_subcommand(
      "report",
      "KernelBench metrics (correctness, fast_p, geometric-mean speedup vs eager and "
      "torch.compile), a per-problem table and plots for a run or batch directory");
  report->add_option("DIR", command->dir, "Run directory or batch directory")->required();
  report->add_option("--html", command->html,
                     "Also write one self-contained HTML page with the plots to FILE");
  report->add_option("--against", command->against,
                     "Compare with another run or batch directory of the same problems (e.g. "
                     "runs from an empty KB): evaluations until each run came within 5 % of its "
                     "final best, the final best and the wall, per level and overall");
  report->add_flag("--json", command->json,
                   "Print one JSON object for scripts instead of Markdown");
  report->footer(kFooter);
  report->callback([&action, &globals, command] {
    action = [&globals, command] { return run_report(*command, globals); };
  });
}

}  // namespace mblast::cli
