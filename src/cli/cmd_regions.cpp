// `mblast regions PROBLEM`: the problem's Model as a graph of ops, each op's share of the measured
// time and the region windows the model-level optimizer works on (worker/mblast_regions).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/app.hpp"
#include "mblast/python.hpp"

namespace mblast::cli {

namespace {

constexpr const char* kFooter = R"(
The Model is traced with torch.fx and run op by op on its example inputs (get_inputs) to measure
each op's time. A window is a run of consecutive, connected ops: the ops of one block of the
model (a submodule's forward, a residual block with its shortcut, up to twelve ops), or of the
model's own ops between blocks, closed at a quarter of the time or eight ops; windows under 5 % of
the time are left to the rest of the model. Each window shows its signature (op kinds and size
class: its reward statistics are kept per signature), its key, equal wherever the same
computation at the same shapes repeats, and its computation key, equal wherever it repeats at
other shapes (the optimizer retries what held there first). A model the tracer cannot follow (control flow on values) is reported with the
reason; the optimizer then keeps it whole. The problem's own code runs here in a plain Python
process, outside the judge's sandbox: give it problems you trust.)";

struct RegionsCommand {
  std::string problem;
  std::string device = "cpu";
  double timeout_s = 300;
  bool json = false;
};

std::string percent(const nlohmann::json& share) {
  return share.is_number() ? fmt::format("{:5.1f}%", share.get<double>() * 100) : "    -";
}

void print_regions(const RegionsCommand& c, const nlohmann::json& r) {
  if (!r.value("captured", false)) {
    std::cout << c.problem << ": not captured as a graph: " << r.value("failure", std::string())
              << "\nthe optimizer keeps this model whole\n";
    return;
  }
  const auto& ops = r.at("ops");
  const auto& windows = r.at("windows");
  std::cout << c.problem << ": " << ops.size() << " ops, " << windows.size()
            << " region windows (largest share first)\n";
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const auto& w = windows[i];
    const auto& names = w.at("ops");
    const std::string span = names.size() == 1 ? names.front().get<std::string>()
                                               : names.front().get<std::string>() + " .. " +
                                                     names.back().get<std::string>();
    std::cout << fmt::format("  {:2}. {}  {} ({} op{})  reads {}  gives {}\n", i + 1,
                             percent(w.at("share")), span, names.size(),
                             names.size() == 1 ? "" : "s",
                             fmt::join(w.at("inputs").get<std::vector<std::string>>(), ", "),
                             fmt::join(w.at("outputs").get<std::vector<std::string>>(), ", "));
    if (w.contains("signature"))
      std::cout << fmt::format("      {}  key {}  computation {}\n",
                               w.value("signature", std::string()), w.value("key", std::string()),
                               w.value("computation", std::string()));
  }
  std::cout << "ops:\n";
  for (const auto& op : ops) {
    const std::string shape =
        op.at("shape").is_array()
            ? fmt::format("[{}]", fmt::join(op.at("shape").get<std::vector<long long>>(), ", "))
            : "-";
    std::cout << fmt::format("  {}  {:<28} {:<18} {}\n", percent(op.at("share")),
                             op.at("name").get<std::string>(), op.at("op_type").get<std::string>(),
                             shape);
  }
}

int run_regions(const RegionsCommand& c) {
  const nlohmann::json result = run_regions_worker(
      c.problem, c.device, std::chrono::milliseconds(static_cast<long long>(c.timeout_s * 1000)));
  if (c.json) {
    std::cout << result.dump(2) << "\n";
  } else {
    print_regions(c, result);
  }
  return 0;
}

}  // namespace

void register_regions(CLI::App& app, Globals& /*globals*/, Action& action) {
  auto c = std::make_shared<RegionsCommand>();
  auto* regions = app.add_subcommand(
      "regions",
      "Show a problem's Model as the model-level optimizer sees it: its ops in order with their "
      "share of the measured time, and the region windows (runs of connected ops)");
  regions->add_option("PROBLEM", c->problem, "KernelBench problem file (Model, get_inputs, ...)")
      ->required();
  regions->add_option("--device", c->device, "Where to run and time the ops: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  regions->add_option("--timeout", c->timeout_s, "Seconds the tracing and timing may take")
      ->check(CLI::PositiveNumber);
  regions->add_flag("--json", c->json, "Print the graph and windows as one JSON object");
  regions->footer(kFooter);
  regions->callback([&action, c] { action = [c] { return run_regions(*c); }; });
}

}  // namespace mblast::cli
