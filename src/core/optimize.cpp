// `mblast optimize`: the run directory, the knowledge base, the agents and the backend, wired
// into the loop (core/loop.hpp).
#include "mblast/optimize.hpp"

#include "core/loop.hpp"
#include "core/workloads_backend.hpp"
#include "mblast/backend.hpp"
#include "mblast/error.hpp"
#include "mblast/python.hpp"
#include "mblast/sol_problem.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;
using namespace optimize_detail;

namespace {

EvalOptions eval_options(const OptimizeOptions& o) {
  EvalOptions e;
  static_cast<JudgeOptions&>(e) = o.judge;
  e.problem = fs::absolute(o.problem);
  e.profile = true;  // every candidate's signature classifies the state of the next step
  // The first state's signature comes from the reference judged as a candidate; a profile of the
  // reference beside every candidate would cost seconds per step on long forwards (an LSTM: 9 s).
  e.profile_reference = false;
  e.use_server = o.eval_server;
  e.cache_dir = o.judge.cache_dir.empty() ? default_cache_dir() : fs::absolute(o.judge.cache_dir);
  return e;
}

// A SOL-ExecBench problem is judged through its workloads' problem files, written into the run
// directory (again on resume: the same files, so the judge's cached references still hold).
std::unique_ptr<Backend> make_backend(const OptimizeOptions& options, const BackendRows& backends,
                                      const RunDir& run) {
  EvalOptions eval = eval_options(options);
  std::optional<SolProblem> sol;
  if (is_sol_problem(options.problem)) {
    sol = write_sol_problem(options.problem, run.path() / "sol");
    eval.problem = sol->workloads.front().file;
  }
  BackendContext context{eval, require_torch_python(), static_cast<std::size_t>(options.prestart)};
  auto backend = find_backend(backends, options.judge.backend).make(context);
  if (!sol) return backend;
  return make_workloads_backend(std::move(backend), std::move(*sol));
}

RunSummary run_loop(const OptimizeOptions& options, const BackendRows& backends, RunDir& run,
                    const ProgressFn& progress) {
  Resumed resumed = Resumed::from(run);
  KnowledgeBase kb(options.kb);
  Agents agents = make_agents(options, resumed.tokens, resumed.cost_usd);
  auto backend = make_backend(options, backends, run);
  return Loop(options, *backend, kb, agents, run, std::move(resumed), progress).run();
}

void check_options(const OptimizeOptions& o, const BackendRows& backends) {
  const auto& traits = find_backend(backends, o.judge.backend).traits;
  traits.check_device(o.judge.device);
  check_target_options(backends, traits, o.judge.target);
  if (o.iterations < 1 || o.steps < 1) throw input_error("--iterations and --steps must be >= 1");
  if (!fs::is_regular_file(o.problem) && !is_sol_problem(o.problem)) {
    throw input_error(
        "no such problem file or SOL-ExecBench problem directory: " + o.problem.string(),
        "check the path (a problem directory holds definition.json and workload.jsonl)");
  }
}

constexpr std::size_t kMaxStemChars = 120;

fs::path default_run_dir(const OptimizeOptions& o) {
  const std::string stamp = utc_now();  // 2026-11-29T16:09:51.123Z
  std::string compact;
  for (char c : stamp.substr(0, 19)) {
    if (c != '-' && c != ':') compact.push_back(c == 'T' ? '-' : c);
  }
  std::string stem =
      (is_sol_problem(o.problem) ? sol_problem_directory(o.problem) : o.problem).stem().string();
  if (stem.size() > kMaxStemChars) {
    // A file name may hold 255 bytes: a long problem name is cut, and a digest keeps it unique.
    stem = stem.substr(0, kMaxStemChars) + "-" + sha256_hex(stem).substr(0, 8);
  }
  return fs::path("mblast-runs") / (stem + "-" + compact);
}

}  // namespace

void request_optimize_stop() { g_optimize_stop_requested = true; }

RunSummary optimize(OptimizeOptions options, const BackendRows& backends,
                    const ProgressFn& progress) {
  const auto& traits = find_backend(backends, options.judge.backend).traits;
  if (options.judge.device == "cuda" && traits.default_device != "cuda")
    options.judge.device = traits.default_device;
  check_options(options, backends);
  options.problem = fs::absolute(options.problem);
  if (options.out.empty()) options.out = default_run_dir(options);
  if (options.kb.empty()) options.kb = default_kb_path();
  options.kb = fs::absolute(options.kb);
  { KnowledgeBase check(options.kb); }  // a corrupt or newer KB fails before any run exists
  const bool existed = fs::exists(options.out);
  RunDir run = RunDir::create(options.out);
  options.out = run.path();
  nlohmann::json config = {{"options", options_to_json(options)},
                           {"mblast_version", MBLAST_VERSION},
                           {"created_at", utc_now()}};
  try {
    run.write_config(config);
    return run_loop(options, backends, run, progress);
  } catch (const Error& e) {
    // Bad input (a broken problem, an unknown technique, a reference that fails its own checks)
    // leaves nothing behind: no half-written run for `mblast report` to count.
    if (e.code() == ExitCode::bad_input && !existed && run.steps().empty()) {
      std::error_code ec;
      fs::remove_all(run.path(), ec);
    }
    throw;
  }
}

// In today's form, whichever version recorded them.
nlohmann::json recorded_options(const fs::path& run_dir) {
  const auto raw = RunDir::open(run_dir).config().value("options", nlohmann::json::object());
  return options_to_json(options_from_json(raw));
}

RunSummary resume_optimize(const fs::path& run_dir, const nlohmann::json& overrides,
                           const BackendRows& backends, const ProgressFn& progress) {
  RunDir run = RunDir::open(run_dir);
  nlohmann::json config = run.config();
  nlohmann::json recorded =
      options_to_json(options_from_json(config.value("options", nlohmann::json::object())));
  for (const auto& [key, value] : overrides.items()) recorded[key] = value;
  OptimizeOptions options = options_from_json(recorded);
  check_options(options, backends);
  config["options"] = options_to_json(options);
  run.write_config(config);
  return run_loop(options, backends, run, progress);
}

}  // namespace mblast
