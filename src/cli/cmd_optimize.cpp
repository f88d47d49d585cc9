// `mblast optimize PROBLEM.py`: the MAIC-RL loop, with a live progress line and a summary.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <spdlog/spdlog.h>

#include "backend_registry.hpp"
#include "cli/app.hpp"
#include "cli/table.hpp"
#include "mblast/error.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/optimize.hpp"

namespace mblast::cli {

namespace {

struct OptimizeCommand {
  OptimizeOptions options;
  std::string problem, out, resume, cache_dir, config;
  int timeout_s = 0;
  int compile_timeout_s = 0;
  std::optional<int> max_evaluations;
  std::optional<double> time_limit, max_cost;
  std::optional<std::int64_t> max_tokens;
  bool json = false;
  bool no_grad_timing = false;
  bool strict_tolerance = false;
  bool no_server = false;
};

std::string fixed(const nlohmann::json& value, const char* format, const char* none = "-") {
  if (!value.is_number()) return none;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value.get<double>());
  return buffer;
}

// Eager times of one run further apart than this are shown with the summary.
constexpr double kEagerSpread = 1.1;

// "eager 0.1234 ms on <hardware>; slots: ..." or the native backend's fixed baselines.
std::string baseline_text(const RunBaseline& b) {
  std::string figures;
  for (const auto& f : b.baselines) {
    figures += (figures.empty() ? "" : ", ") + f.name + " " +
               fixed(f.value, f.unit == "ms" ? "%.4f ms" : "%.0f cost");
  }
  return (figures.empty() ? "eager " + fixed(optional_json(b.ref_ms), "%.4f ms") : figures) +
         " on " + b.hardware + "; slots: " + b.slot_list();
}

// Progress on stderr: one rewritten line on a terminal, one line per step otherwise.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) != 0) {}

  void operator()(const ProgressEvent& event) {
    if (event.start) {
      const RunStart& s = *event.start;
      line("mblast optimize " + s.task + " on " + s.backend +
           (s.device.empty() ? "" : " (" + s.device + ")") + "\n  run dir " + s.run_dir +
           "\n  kb      " + s.kb + "\n  llm     " + s.llm);
    } else if (event.baseline) {
      line("  baseline " + baseline_text(*event.baseline));
    } else if (event.kind == "note") {
      line("  " + event.text);
    } else if (event.kind == "step_start" && event.step) {
      status(head(*event.step) + " ...");
    } else if (event.kind == "step" && event.step) {
      const StepRecord& s = *event.step;
      const std::string text =
          head(s) + " -> " + std::string(to_string(s.outcome)) +
          (s.speedup ? " " + fixed(*s.speedup, "%.3fx") : "") +
          (s.fixes > 0 ? " after " + std::to_string(s.fixes) + " fix(es)" : "") + " | best " +
          fixed(optional_json(s.best_speedup), "%.3fx") + " | tokens " +
          std::to_string(s.tokens_total) +
          (s.cost_total_usd ? " $" + fixed(*s.cost_total_usd, "%.2f") : "");
      if (tty_) {
        status(text);
      } else {
        line(text);
      }
    } else if (event.kind == "end" && event.summary) {
      line("  stopped: " + event.summary->status + " (" + event.summary->stop_reason + ")");
    }
  }

 private:
  static std::string head(const StepRecord& s) {
    return "[it " + std::to_string(s.iteration) + " step " + std::to_string(s.step) + "] " +
           s.slot + " | " + s.state + " | " + s.technique;
  }
  void status(const std::string& text) {
    if (quiet_ || !tty_) return;
    std::cerr << "\r\033[K" << text.substr(0, 160) << std::flush;
    open_ = true;
  }
  void line(const std::string& text) {
    if (quiet_) return;
    if (open_) std::cerr << "\r\033[K";
    open_ = false;
    std::cerr << text << "\n" << std::flush;
  }
  bool quiet_;
  bool tty_;
  bool open_ = false;
};

// The best candidate against every baseline after the headline one (native backends time
// several: the headline is what a user would otherwise run, the rest are columns of their own).
std::vector<nlohmann::json> speedups_over_other_baselines(const RunSummary& r) {
  std::vector<nlohmann::json> rows;
  const auto& baselines = r.baselines;
  if (!r.best_speedup || baselines.empty() || baselines[0].name != r.speedup_baseline) return rows;
  const double primary = baselines[0].value;
  const double best = *r.best_speedup;
  if (primary <= 0 || best <= 0) return rows;
  for (std::size_t i = 1; i < baselines.size(); ++i) {
    const auto& b = baselines[i];
    if (b.unit != baselines[0].unit || b.value <= 0) continue;
    rows.push_back(
        {{"what", "  also"}, {"value", fixed(best * b.value / primary, "%.3fx over ") + b.name}});
  }
  return rows;
}

void print_summary(const RunSummary& r) {
  std::cout << "\nrun " << r.status << ": " << r.stop_reason << "\n";
  nlohmann::json rows = nlohmann::json::array();
  const auto row = [&](const std::string& what, const nlohmann::json& value) {
    rows.push_back({{"what", what}, {"value", value}});
  };
  row("task", r.task);
  row("hardware", r.hardware);
  row("llm", r.llm);
  row("steps / evaluations", std::to_string(r.steps) + " / " + std::to_string(r.evaluations));
  row("correct candidates", r.correct_candidates);
  const std::string& over = r.speedup_baseline;
  if (over == "eager") {
    // The pair best_speedup divides: eager as timed beside the best, in the same interleaved run.
    const auto eager = r.best_eager_ms ? r.best_eager_ms : r.baseline_ms;
    row("eager time", fixed(optional_json(eager), "%.4f ms (beside the best)"));
    row("best time", fixed(optional_json(r.best_ms), "%.4f ms"));
    if (r.eager_range && r.eager_range->ratio() > kEagerSpread) {
      // Each speedup is over eager timed in its own evaluation: say when those differed.
      const EagerRange& e = *r.eager_range;
      row("eager range", fixed(e.min_ms, "%.4f") + " - " + fixed(e.max_ms, "%.4f ms") + " over " +
                             std::to_string(e.evaluations) +
                             " evaluations: a speedup carries the eager time of its own");
    }
  }
  // Headline first, each with what it is (the thread count, the library and its version).
  for (const auto& b : r.baselines) {
    row("baseline " + b.name, fixed(b.value, b.unit == "ms" ? "%.4f ms" : "%.0f (cost)") +
                                  (b.detail.empty() ? "" : ": " + b.detail));
  }
  if (r.speedup_vs_compile) row("vs torch.compile", fixed(*r.speedup_vs_compile, "%.3fx"));
  row("best speedup",
      fixed(optional_json(r.best_speedup), ("%.3fx over " + over).c_str(), "none correct"));
  for (auto& also : speedups_over_other_baselines(r)) rows.push_back(std::move(also));
  row("best technique", r.correct() ? nlohmann::json(r.best_technique) : nlohmann::json());
  if (r.sol_score) {
    row("SOL score", fixed(*r.sol_score, "%.3f") + " (0.5 at eager, 1 at the speed of light " +
                         fixed(optional_json(r.sol_ms), "%.4f ms") + ")");
  }
  if (r.best_speedup && *r.best_speedup < 1.0) {
    row("note", "no candidate beat the baseline (" + over + "); it stays the fastest");
  }
  row("tokens / cost",
      std::to_string(r.tokens) + " / " + fixed(optional_json(r.cost_usd), "$%.4f", "unknown"));
  row("best file", optional_json(r.best_file));
  row("KernelBench export", optional_json(r.kernelbench_file));
  row("run dir", r.run_dir.string());
  std::cout << format_table(rows, {{"what", "", 24}, {"value", "", 120}});
}

// The key of options_to_json each fixed option of `optimize` sets (backend options: "target").
const std::map<std::string, std::string>& option_keys() {
  static const std::map<std::string, std::string> keys = {
      {"--backend", "backend"},
      {"--device", "device"},
      {"--llm-config", "llm_config"},
      {"--llm-record", "llm_record"},
      {"--fix-attempts", "fix_attempts"},
      {"--technique", "techniques"},
      {"--atol", "atol"},
      {"--rtol", "rtol"},
      {"--strict-tolerance", "tolerance_policy"},
      {"--allow-tf32", "allow_tf32"},
      {"--allow-bf16", "allow_bf16"},
      {"--regions", "regions"},
      {"--graph-first", "graph_first"},
      {"--prebuild", "prebuild"},
      {"--profile", "profiler"},
      {"--ncu-kernels", "ncu_kernels"},
      {"--other-hardware-weight", "other_hardware_weight"},
      {"--seed", "seed"},
      {"--seeds", "seeds"},
      {"--runs", "timing_runs"},
      {"--no-grad-timing", "timing_autograd"},
      {"--timeout", "timeout_s"},
      {"--compile-timeout", "compile_timeout_s"},
      {"--cache-dir", "cache_dir"},
      {"--out", "out"}};
  return keys;
}

// A resumed run keeps its recorded options but for its budgets and its LLM: another option given
// with --resume must have the recorded value (a batch script repeats them), else it is an error,
// never silently dropped. `given` holds the command line's options as a new run would record them.
void check_options_on_resume(const CLI::App& cmd, const nlohmann::json& given,
                             const std::string& run_dir) {
  static const std::set<std::string> changeable = {
      "--resume",     "--iterations", "--steps",    "--max-evaluations",
      "--time-limit", "--max-tokens", "--max-cost", "--llm",
      "--json",       "--help",       "--no-server"};
  const nlohmann::json recorded = recorded_options(run_dir);
  std::string changed;
  for (const CLI::Option* option : cmd.get_options()) {
    const std::string name = option->get_name();
    if (option->count() == 0 || changeable.count(name)) continue;
    const auto key = option_keys().find(name);
    const std::string field = key == option_keys().end() ? "target" : key->second;
    if (given.value(field, nlohmann::json()) == recorded.value(field, nlohmann::json())) continue;
    changed += (changed.empty() ? "" : ", ") + name;
  }
  if (changed.empty()) return;
  throw input_error("--resume continues the run with its recorded options; these cannot change: " +
                        changed + " (budgets and --llm can)",
                    "drop them, or start a new run with other options: `mblast optimize PROBLEM "
                    "--out NEW_DIR ...` (the recorded ones are in " +
                        run_dir + "/config.json)");
}

extern "C" void on_stop_signal(int) {
  request_optimize_stop();
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

void add_search_options(CLI::App* cmd, OptimizeCommand& c) {
  cmd->add_option("--llm", c.options.llm,
                  "PROVIDER:MODEL (openai:, anthropic:, command:, replay:FILE) or none; default: "
                  "$MBLAST_LLM, the config file, else the first API key set, else none "
                  "(built-in techniques only)");
  cmd->add_option("--llm-config", c.config, "LLM config file (TOML) instead of the default");
  cmd->add_option("--llm-record", c.options.llm_record,
                  "Append every LLM exchange to this cassette");
  cmd->add_option("--iterations", c.options.iterations, "Iterations (default 10)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--steps", c.options.steps, "Rollout steps per iteration (default 10)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--fix-attempts", c.options.fix_attempts,
                  "Repairs of a failing LLM candidate (default 3)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--technique", c.options.techniques,
                  "Only try this technique (repeat for several; ids from `mblast kb query --kind "
                  "techniques`)");
  cmd->add_option("--max-evaluations", c.max_evaluations, "Stop after this many evaluations")
      ->check(positive_number());
  cmd->add_option("--time-limit", c.time_limit,
                  "Stop after this many minutes; an evaluation still running then is stopped "
                  "and judged again on --resume (the device's one-time calibration on a "
                  "machine's first run is not counted)")
      ->check(positive_number());
  cmd->add_option("--max-tokens", c.max_tokens, "Stop once LLM tokens (in + out) reach this")
      ->check(positive_number());
  cmd->add_option("--max-cost", c.max_cost,
                  "Stop once the LLM cost reaches this many USD (needs prices in the config)")
      ->check(positive_number());
  cmd->add_option("--out", c.out, "Run directory (default ./mblast-runs/PROBLEM-TIME)");
  cmd->add_option("--resume", c.resume,
                  "Continue the run in this directory with its options; budgets given now "
                  "replace the recorded ones");
}

void add_judge_options(CLI::App* cmd, OptimizeCommand& c) {
  cmd->add_option("--atol", c.options.judge.atol, "Absolute tolerance (default 1e-4)")
      ->check(positive_number());
  cmd->add_option("--rtol", c.options.judge.rtol, "Relative tolerance (default 1e-4)")
      ->check(positive_number());
  cmd->add_flag("--strict-tolerance", c.strict_tolerance,
                "Do not widen the tolerance to 1.5x PyTorch eager's own error");
  cmd->add_flag("--allow-tf32", c.options.judge.allow_tf32,
                "Allow TF32 math (and the TF32 built-in)");
  cmd->add_flag("--allow-bf16", c.options.allow_bf16, "Allow bf16 math (and the bf16 built-in)");
  cmd->add_flag("--regions", c.options.regions,
                "Also work on region windows of the Model (`mblast regions` shows them): built-ins "
                "that take a region (compile, cuDNN autotuning) apply to one window, the rest "
                "stays as the reference has it (CUDA backend)");
  cmd->add_flag("--graph-first", c.options.graph_first,
                "Judge the whole model in a CUDA graph first; where that is correct, every later "
                "built-in candidate is judged inside such a graph (CUDA GPUs)");
  cmd->add_flag("--prebuild", c.options.prebuild,
                "While a step is judged, evaluate the built-in the selector would choose next "
                "up to its first call (its compile) in the background, paused while a candidate "
                "is timed; the step that chooses it goes on in that worker (CUDA GPUs; "
                "experimental, docs/ARCHITECTURE.md)");
  cmd->add_option("--profile", c.options.judge.profiler,
                  "What profiles each candidate for the state classifier: torch (the PyTorch "
                  "profiler, default) or ncu (also Nsight Compute's counters: DRAM, L2 and SM "
                  "throughput, tensor pipes, occupancy, warp stalls; CUDA only, adds about a "
                  "profile's cost to every step)")
      ->check(CLI::IsMember({"torch", "ncu"}));
  add_ncu_kernels_option(cmd, c.options.judge.ncu_kernels);
  cmd->add_option(
         "--other-hardware-weight", c.options.other_hardware_weight,
         "Weight of a KB attempt made on other hardware (another GPU, the CPU) against one "
         "made on this hardware in the technique selector's statistics: 0 ignores other "
         "hardware, 1 counts it fully (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", c.options.judge.seed,
                  "Seed of the selector, agents and trials (default 1)");
  cmd->add_option("--seeds", c.options.judge.seeds, "Verification trials per candidate (default 5)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--runs", c.options.judge.timing_runs,
                  "Timed runs per candidate, at most (default 100; on CUDA fewer where they would "
                  "take over about 0.4 s, never under 20)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--no-grad-timing", c.no_grad_timing,
                "Time candidates under torch.no_grad() (CUDA); by default timed calls record "
                "autograd, as KernelBench's harness times them");
  cmd->add_option("--timeout", c.timeout_s,
                  "Seconds a candidate's worker may take in all before it is killed. Default: "
                  "derived from the reference, a minute plus 1000 x eager's time once the problem "
                  "is prepared (at most 600 s) and the candidate compiled (--compile-timeout)")
      ->check(non_negative_number());
  cmd->add_option(
         "--compile-timeout", c.compile_timeout_s,
         "Seconds a candidate's import and first call may take (JIT builds, torch.compile); "
         "default 90 on the CPU, 300 on a GPU")
      ->check(non_negative_number());
  cmd->add_option("--cache-dir", c.cache_dir,
                  "Reference and build cache (default ~/.cache/mblast)");
  cmd->add_flag("--no-server", c.no_server,
                "Judge in this process instead of the eval server, which keeps workers started "
                "between runs on a GPU (MBLAST_EVAL_SERVER=0 does the same)");
}

// The budgets and LLM given again with --resume, which replace the recorded ones.
nlohmann::json resume_overrides(const OptimizeCommand& c, const CLI::App& cmd) {
  const auto& o = c.options;
  nlohmann::json overrides = nlohmann::json::object();
  const auto given = [&](const char* flag) { return cmd.count(flag) > 0; };
  if (given("--iterations")) overrides["iterations"] = o.iterations;
  if (given("--steps")) overrides["steps"] = o.steps;
  if (given("--max-evaluations")) overrides["max_evaluations"] = *o.max_evaluations;
  if (given("--time-limit")) overrides["time_limit_minutes"] = *o.time_limit_minutes;
  if (given("--max-tokens")) overrides["max_tokens"] = *o.max_tokens;
  if (given("--max-cost")) overrides["max_cost_usd"] = *o.max_cost_usd;
  if (given("--llm")) overrides["llm"] = o.llm;
  if (c.no_server) overrides["eval_server"] = false;
  return overrides;
}

// Completes the options from the flags, runs (or resumes) and prints the summary.
int run_optimize(OptimizeCommand& c, const CLI::App& cmd, const Globals& globals) {
  auto& o = c.options;
  o.max_evaluations = c.max_evaluations;
  o.time_limit_minutes = c.time_limit;
  o.max_tokens = c.max_tokens;
  o.max_cost_usd = c.max_cost;
  o.judge.timeout = std::chrono::seconds(c.timeout_s);
  if (c.no_grad_timing) o.judge.timing_autograd = false;
  if (c.strict_tolerance) o.judge.tolerance_policy = "strict";
  o.judge.compile_timeout = std::chrono::seconds(c.compile_timeout_s);
  o.judge.cache_dir = c.cache_dir;
  o.eval_server = !c.no_server;
  if (!c.config.empty()) o.llm_config = c.config;
  if (!globals.kb_path.empty()) o.kb = globals.kb();
  Progress progress(globals.quiet);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  RunSummary result;
  if (!c.resume.empty()) {
    if (!c.problem.empty()) {
      throw input_error("--resume takes no PROBLEM: the run directory names it",
                        "run `mblast optimize --resume " + c.resume + "`");
    }
    o.out = c.out;
    check_options_on_resume(cmd, options_to_json(o), c.resume);
    const nlohmann::json overrides = resume_overrides(c, cmd);
    result = resume_optimize(c.resume, overrides, backend_registry(), std::ref(progress));
  } else {
    if (c.problem.empty()) {
      throw input_error("no PROBLEM given",
                        "run `mblast optimize PROBLEM.py`, or --resume RUN_DIR");
    }
    o.problem = c.problem;
    o.out = c.out;
    result = optimize(o, backend_registry(), std::ref(progress));
  }
  if (c.json) {
    std::cout << result.to_json().dump(2) << "\n";
  } else {
    print_summary(result);
  }
  const std::string& status = result.status;
  return status == "llm_error" || status == "interrupted" ? 1 : 0;
}

}  // namespace

void register_optimize(CLI::App& app, Globals& globals, Action& action) {
  auto c = std::make_shared<OptimizeCommand>();
  auto* cmd = app.add_subcommand(
      "optimize",
      "Search for a faster verified implementation of a KernelBench-style problem with the "
      "MAIC-RL loop: per step an operator slot, its profile state, a technique chosen by UCB "
      "over the knowledge base, a candidate from the LLM actor (repaired by the fix agent) or "
      "a built-in transform, verification and timing, and a critic that writes what was "
      "learned to the KB. Exit 0 when the run ends (see status), 1 when it fails, 2 for bad "
      "input");
  cmd->add_option("PROBLEM", c->problem, "KernelBench problem file (Model, get_inputs, ...)");
  add_target_options(cmd,
                     {c->options.judge.backend, c->options.judge.device, c->options.judge.target});
  add_search_options(cmd, *c);
  add_judge_options(cmd, *c);
  cmd->add_flag("--json", c->json, "Print the result object as JSON on stdout");
  cmd->callback([&action, &globals, c, cmd] {
    action = [c, cmd, &globals] { return run_optimize(*c, *cmd, globals); };
  });
}

}  // namespace mblast::cli
