// `mblast eval PROBLEM.py --candidate FILE [--candidate FILE ...]`: the judge, on its own.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "backend_registry.hpp"
#include "cli/app.hpp"
#include "core/workloads_backend.hpp"
#include "mblast/backend.hpp"
#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "mblast/eval_result.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/python.hpp"
#include "mblast/sol_problem.hpp"
#include "mblast/support.hpp"

namespace mblast::cli {

namespace {

struct EvalCommand {
  EvalOptions options;
  std::string problem;
  std::vector<std::string> candidates;
  std::string cache_dir;
  bool strict = false;
  bool no_timing = false;
  bool no_grad_timing = false;
  int timeout_s = 0;
  int compile_timeout_s = 0;
  int prestart = 1;
  std::string export_path;
  bool json = false;
  bool no_server = false;
  // --profile's value: kNotGiven without the flag, empty when it is given alone.
  std::string profile_with = kNotGiven;
  static constexpr const char* kNotGiven = "(not given)";
};

std::string number(const nlohmann::json& value, const char* format) {
  if (!value.is_number()) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value.get<double>());
  return buffer;
}

std::string number(const std::optional<double>& value, const char* format) {
  return number(optional_json(value), format);
}

// The verdict, errors and tolerance, as the judge wrote them.
void print_verdict(const EvalResult& e, const nlohmann::json& r) {
  std::cout << "problem     " << r["problem"].get<std::string>() << "\n"
            << "candidate   " << r["candidate"].get<std::string>() << "\n"
            << "verdict     " << (e.correct ? "CORRECT" : "INCORRECT");
  if (r.contains("trials") && r["trials"].is_array()) {
    int passed = 0;
    for (const auto& trial : r["trials"]) passed += trial.value("pass", false) ? 1 : 0;
    std::cout << " (" << passed << "/" << r["trials"].size() << " trials)";
  }
  std::cout << "\n";
  if (e.error) std::cout << "error       " << *e.error << "\n";
  std::cout << "max error   abs " << number(e.max_abs_err, "%.3g") << ", rel "
            << number(e.max_rel_err, "%.3g");
  if (e.tolerance) {
    std::cout << "  (allowed atol " << number(nlohmann::json(e.tolerance->atol), "%.3g")
              << ", rtol " << number(nlohmann::json(e.tolerance->rtol), "%.3g");
    if (e.tolerance->matched_ratio) {
      std::cout << " for " << number(nlohmann::json(*e.tolerance->matched_ratio * 100), "%.4g")
                << "% of elements";
    }
    if (e.tolerance->error_cap) {
      std::cout << ", cap " << number(nlohmann::json(*e.tolerance->error_cap), "%.3g");
    }
    std::cout << ", policy " << (e.tolerance->policy.empty() ? "?" : e.tolerance->policy) << ")";
    if (r.contains("workloads")) std::cout << " on workload 1";
  }
  std::cout << "\n";
  if (r.contains("eager_max_abs_err") && r["eager_max_abs_err"].is_number()) {
    std::cout << "eager error abs " << number(r["eager_max_abs_err"], "%.3g") << ", rel "
              << number(r["eager_max_rel_err"], "%.3g") << " (PyTorch fp32 vs the "
              << (r["reference_precision"].is_string() ? r["reference_precision"].get<std::string>()
                                                       : std::string("float64"))
              << " reference)\n";
  }
}

// Times: the native backends' baselines, or eager against the candidate (and torch.compile).
void print_times(const EvalResult& e, const nlohmann::json& r) {
  if (e.baselines) {
    const auto timing = r.find("timing");
    const bool has_timing = timing != r.end() && timing->is_object();
    std::cout << "measured    "
              << (has_timing && timing->contains("cost")
                      ? "cost " + number((*timing)["cost"], "%.0f")
                      : number(has_timing && timing->contains("median_ms") ? (*timing)["median_ms"]
                                                                           : nlohmann::json(),
                               "%.4f") +
                            " ms")
              << "\n";
    for (const auto& b : *e.baselines) {
      std::cout << "baseline    " << b.name << " " << number(nlohmann::json(b.value), "%.4g") << " "
                << b.unit << ", speedup " << number(b.speedup, "%.3f") << "x\n";
    }
  } else if (e.ref_ms || e.cand_ms) {
    std::cout << "time        eager " << number(e.ref_ms, "%.4f") << " ms, candidate "
              << number(e.cand_ms, "%.4f") << " ms, speedup " << number(e.speedup, "%.3f") << "x";
    if (e.compile_ms) std::cout << "; torch.compile " << number(e.compile_ms, "%.4f") << " ms";
    std::cout << "\n";
  }
}

// A SOL-ExecBench problem's workloads, one line each (the times above are their geometric means).
void print_workloads(const nlohmann::json& r) {
  const auto workloads = r.find("workloads");
  if (workloads == r.end() || !workloads->is_array()) return;
  std::cout << "workloads   " << workloads->size() << " of " << r.value("workloads_total", 0)
            << " judged; times above are their geometric means\n";
  for (const auto& w : *workloads) {
    std::string axes;
    for (const auto& [name, value] : w["axes"].items()) {
      axes += (axes.empty() ? "" : " ") + name + "=" + value.dump();
    }
    std::string uuid = w.value("uuid", "");
    if (uuid.size() > 13) uuid = uuid.substr(0, 8);  // a UUID's first group names it
    std::cout << "  " << uuid << "  " << axes << "  "
              << (w.value("correct", false) ? "correct" : "INCORRECT") << "  eager "
              << number(w["ref_ms"], "%.4f") << " ms, candidate " << number(w["cand_ms"], "%.4f")
              << " ms, " << number(w["speedup"], "%.3f") << "x\n";
  }
}

// Nsight Compute's part of a signature (--profile ncu): its numbers, or why there are none.
void print_ncu(const ProfileSignature& sig) {
  const auto ncu = sig.to_json().value("ncu", nlohmann::json());
  if (!ncu.is_object()) return;
  std::cout << "ncu        ";
  if (ncu.value("status", "") != "ok") {
    std::cout << " " << ncu.value("status", "failed") << ": " << ncu.value("reason", "") << "\n";
    return;
  }
  for (const char* metric :
       {"ncu_kernel_count", "dram_throughput_fraction", "l2_throughput_fraction",
        "sm_throughput_fraction", "tensor_pipe_fraction", "achieved_occupancy",
        "stall_memory_fraction", "dram_bytes_ratio"}) {
    if (const auto value = sig.metric(metric)) {
      std::cout << " " << metric << "=" << number(nlohmann::json(*value), "%.3g");
    }
  }
  std::cout << " (" << number(ncu.value("wall_s", nlohmann::json()), "%.1f") << " s)\n";
}

void print_report(const nlohmann::json& r) {
  const EvalResult e = EvalResult::from_json(r);
  print_verdict(e, r);
  print_times(e, r);
  print_workloads(r);
  if (r.contains("sol_score") && r["sol_score"].is_number()) {
    std::cout << "sol score   " << number(r["sol_score"], "%.3f")
              << " (SOL-ExecBench's: 0.5 at eager's time, 1 at the speed of light)";
    if (r.contains("sol_score_vs_compile") && r["sol_score_vs_compile"].is_number()) {
      std::cout << "; " << number(r["sol_score_vs_compile"], "%.3f")
                << " with torch.compile as T_b";
    }
    std::cout << "\n";
  }
  if (r.contains("sol_ms") && r["sol_ms"].is_number() && e.cand_ms) {
    const double sol = r["sol_ms"].get<double>();
    if (e.ref_ms && *e.ref_ms < sol) {
      // The judge skipped its check for the same reason: the estimate does not hold here.
      std::cout << "sol         " << number(r["sol_ms"], "%.4f")
                << " ms speed-of-light estimate, not checked: eager itself took "
                << number(e.ref_ms, "%.4f") << " ms, under it\n";
    } else {
      std::cout << "sol         " << number(r["sol_ms"], "%.4f")
                << " ms speed of light; candidate at "
                << number(nlohmann::json(sol / *e.cand_ms * 100), "%.0f") << "% of it\n";
    }
  }
  if (e.signature.to_json().is_object()) {
    const ProfileSignature& sig = e.signature;
    std::cout << "signature  ";
    for (const char* metric :
         {"kernel_count", "launch_overhead_fraction", "sol_fraction", "memory_sol_fraction",
          "compute_sol_fraction", "arithmetic_intensity", "tensor_core_fraction",
          "vector_instruction_fraction", "access_bytes_ratio"}) {
      if (const auto value = sig.metric(metric)) {
        std::cout << " " << metric << "=" << number(nlohmann::json(*value), "%.3g");
      }
    }
    std::cout << "\n";
    print_ncu(sig);
    if (!sig.ops().empty()) {
      std::cout << "top ops    ";
      std::size_t shown = 0;
      for (const auto& op : sig.ops()) {
        if (shown++ == 3) break;
        std::cout << " " << op.name << " " << number(nlohmann::json(op.share * 100), "%.0f") << "%";
      }
      std::cout << "\n";
    }
  }
  std::cout << "flags       "
            << (e.flags.empty() ? "none" : fmt::format("{}", fmt::join(e.flags, ", "))) << "\n";
}

void print_seconds(const nlohmann::json& r) {
  std::cout << "seconds     build " << number(r.value("build_seconds", nlohmann::json()), "%.2f")
            << ", eval " << number(r.value("eval_seconds", nlohmann::json()), "%.2f")
            << " (waiting for the worker "
            << number(r.value("worker_wait_seconds", nlohmann::json()), "%.2f") << ")\n";
}

// {"count", "correct", "p50_s", "p90_s"} over the results' build_seconds + eval_seconds
// (linear interpolation between ranks; null when there are no results).
nlohmann::json latency_summary(const std::vector<nlohmann::json>& results) {
  std::vector<double> seconds;
  int correct = 0;
  for (const auto& r : results) {
    seconds.push_back(r.value("build_seconds", 0.0) + r.value("eval_seconds", 0.0));
    correct += r.value("correct", false) ? 1 : 0;
  }
  nlohmann::json summary = {
      {"count", results.size()}, {"correct", correct}, {"p50_s", nullptr}, {"p90_s", nullptr}};
  if (!seconds.empty()) {
    summary["p50_s"] = percentile(seconds, 0.5);
    summary["p90_s"] = percentile(seconds, 0.9);
  }
  return summary;
}

int report(const EvalCommand& c, const std::vector<nlohmann::json>& results, bool all_correct) {
  if (results.size() == 1) {
    if (c.json) {
      std::cout << results.front().dump(2) << "\n";
    } else {
      print_report(results.front());
    }
    return all_correct ? 0 : 1;
  }
  const auto summary = latency_summary(results);
  if (c.json) {
    nlohmann::json out = {
        {"results", results}, {"p50_s", summary["p50_s"]}, {"p90_s", summary["p90_s"]}};
    std::cout << out.dump(2) << "\n";
  } else {
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (i > 0) std::cout << "\n";
      print_report(results[i]);
      print_seconds(results[i]);
    }
    std::cout << "\nsummary     " << summary["correct"].get<int>() << " of " << results.size()
              << " correct; per candidate (build + eval) p50 " << number(summary["p50_s"], "%.2f")
              << " s, p90 " << number(summary["p90_s"], "%.2f") << " s\n";
  }
  return all_correct ? 0 : 1;
}

void add_eval_options(CLI::App* eval, EvalCommand& c) {
  eval->add_option("PROBLEM", c.problem, "KernelBench problem file (Model, get_inputs, ...)")
      ->required();
  eval->add_option("--candidate", c.candidates,
                   "Candidate file defining ModelNew (CUDA through mblast_cuda.load or "
                   "load_inline, or plain PyTorch); a problem file itself is judged as its own "
                   "candidate. Repeat it (or give several files) to judge several candidates in "
                   "one process: their CUDA is compiled up front in parallel and each one after "
                   "the first finds a worker already started")
      ->required();
  add_target_options(eval, {c.options.backend, c.options.device, c.options.target});
  eval->add_option("--seeds", c.options.seeds,
                   "Verification trials, each with fresh inputs (default 5)")
      ->check(CLI::Range(1, 1000));
  eval->add_option("--seed", c.options.seed, "First trial seed (default 1)");
  eval->add_option("--atol", c.options.atol, "Absolute tolerance (default 1e-4)")
      ->check(positive_number());
  eval->add_option("--rtol", c.options.rtol, "Relative tolerance (default 1e-4)")
      ->check(positive_number());
  eval->add_flag("--strict-tolerance", c.strict,
                 "Do not widen the tolerance to 1.5x PyTorch eager's own error");
  eval->add_flag("--allow-tf32", c.options.allow_tf32, "Allow TF32 matrix math in the candidate");
  eval->add_option("--runs", c.options.timing_runs,
                   "Timed runs of each contender, at most (default 100, as KernelBench; on CUDA "
                   "fewer where they would take over about 0.4 s, never under 20)")
      ->check(CLI::Range(1, 100000));
  eval->add_flag("--no-timing", c.no_timing, "Verify only");
  eval->add_flag(
      "--no-grad-timing", c.no_grad_timing,
      "Time forward calls under torch.no_grad() (CUDA). By default they record autograd, "
      "as a plain call and KernelBench's harness do; correctness trials never do");
  eval->add_option("--profile", c.profile_with,
                   "Profile candidate and reference and report their signatures (op and kernel "
                   "time shares, idle fraction, speed-of-light fractions): with the PyTorch "
                   "profiler (--profile or --profile torch), or also with Nsight Compute "
                   "(--profile ncu: the candidate's DRAM, L2 and SM throughput, tensor pipes, "
                   "occupancy and warp stalls; CUDA only). Give PROBLEM before it or write "
                   "--profile=torch, so that PROBLEM is not taken for its value")
      ->expected(0, 1)
      ->check(CLI::IsMember({"", "torch", "ncu"}));
  add_ncu_kernels_option(eval, c.options.ncu_kernels);
  eval->add_flag("--compile-baseline", c.options.compile_baseline,
                 "Also time torch.compile of the reference");
  eval->add_option("--timeout", c.timeout_s,
                   "Seconds a candidate's worker may take in all before it is killed. Default: "
                   "derived from the reference, a minute plus 1000 x eager's time once the problem "
                   "is prepared (at most 600 s) and the candidate compiled (--compile-timeout)")
      ->check(non_negative_number());
  eval->add_option(
          "--compile-timeout", c.compile_timeout_s,
          "Seconds a candidate's import and first call may take (JIT builds, torch.compile); "
          "default 90 on the CPU, 300 on a GPU")
      ->check(non_negative_number());
  eval->add_option(
      "--cache-dir", c.cache_dir,
      "Reference and build cache (default: $XDG_CACHE_HOME/mblast or ~/.cache/mblast)");
  eval->add_option("--prestart", c.prestart,
                   "Workers kept started ahead of need (default 1). With several candidates, "
                   "raise it when a worker's start-up (Python, torch, CUDA) takes longer than one "
                   "evaluation, so that every candidate still finds a ready worker")
      ->check(CLI::Range(1, 16));
  eval->add_option("--export", c.export_path,
                   "If the candidate is correct, write it here as a self-contained KernelBench "
                   "ModelNew file (CUDA built with load_inline); one candidate only");
  eval->add_flag("--no-server", c.no_server,
                 "Judge in this process instead of the eval server, which keeps a worker started "
                 "between `mblast eval` commands on a GPU (MBLAST_EVAL_SERVER=0 does the same)");
  eval->add_flag("--json", c.json, "Print the result object as JSON");
}

struct PreparedEval {
  const BackendRow& row;
  std::filesystem::path python;
  std::vector<std::filesystem::path> candidates;
  std::optional<SolProblem> sol;  // a SOL-ExecBench problem, judged on every workload
};

// A SOL-ExecBench candidate as the judge takes it: a solution.json becomes a candidate file, the
// problem itself (its directory or definition.json) its reference, workload 1's problem file.
std::filesystem::path sol_candidate(const std::filesystem::path& candidate,
                                    const std::filesystem::path& problem, const SolProblem& sol,
                                    const std::filesystem::path& folder,
                                    const std::filesystem::path& extension_cache) {
  if (is_sol_problem(candidate)) return sol.workloads.front().file;
  if (candidate.extension() != ".json") return candidate;
  const std::string name = candidate.stem().string() + "-" +
                           sha256_hex(std::filesystem::absolute(candidate).string()).substr(0, 8);
  return write_sol_candidate(problem, candidate, folder / "solutions" / (name + ".py"),
                             extension_cache);
}

// Completes the options from the flags and checks the files, the target and the export.
PreparedEval prepare_eval(EvalCommand& c) {
  EvalOptions& options = c.options;
  options.problem = c.problem;
  std::vector<std::filesystem::path> candidates(c.candidates.begin(), c.candidates.end());
  options.candidate = candidates.front();
  options.cache_dir = c.cache_dir;
  options.tolerance_policy = c.strict ? "strict" : "eager-widened";
  options.timing = !c.no_timing;
  options.timing_autograd = !c.no_grad_timing;
  if (c.profile_with != EvalCommand::kNotGiven) {
    options.profile = true;
    options.profiler = c.profile_with.empty() ? "torch" : c.profile_with;
  }
  options.timeout = std::chrono::seconds(c.timeout_s);
  options.compile_timeout = std::chrono::seconds(c.compile_timeout_s);
  std::vector<std::filesystem::path> files = {options.problem};
  files.insert(files.end(), candidates.begin(), candidates.end());
  for (const auto& path : files) {
    if (!std::filesystem::is_regular_file(path) && !is_sol_problem(path)) {
      throw input_error("no such file: " + path.string(),
                        "check the path (a SOL-ExecBench problem is a directory holding "
                        "definition.json and workload.jsonl)");
    }
  }
  const BackendRow& row = backend_row(options.backend);
  if (options.device == "cuda" && row.traits.default_device != "cuda") {
    options.device = row.traits.default_device;
  }
  row.traits.check_device(options.device);
  check_target_options(backend_registry(), row.traits, options.target);
  if (!c.export_path.empty() && candidates.size() != 1) {
    throw input_error("--export takes one candidate, not " + std::to_string(candidates.size()));
  }
  const bool sol = is_sol_problem(options.problem);
  if (!c.export_path.empty() && (row.traits.harness.empty() || sol)) {
    throw input_error("--export writes KernelBench CUDA files",
                      "drop --export for " + options.backend);
  }
  const std::filesystem::path python = require_torch_python();
  if (options.cache_dir.empty()) options.cache_dir = default_cache_dir();
  // Absolute: workers run in their own temporary directories.
  options.cache_dir = std::filesystem::absolute(options.cache_dir);
  options.use_server = !c.no_server;
  if (!sol) return {row, python, candidates, std::nullopt};
  const std::filesystem::path folder = sol_problem_cache(options.cache_dir, options.problem);
  SolProblem problem = write_sol_problem(options.problem, folder);
  for (auto& candidate : candidates) {
    candidate =
        sol_candidate(candidate, options.problem, problem, folder, options.cache_dir / "cuda");
  }
  options.problem = problem.workloads.front().file;
  options.candidate = candidates.front();
  return {row, python, candidates, std::move(problem)};
}

int run_eval(EvalCommand& c) {
  const PreparedEval p = prepare_eval(c);
  // Workers kept pre-started (one by default): the first imports torch while the CUDA
  // sources compile, and each taken worker's replacement starts while it evaluates, ready
  // for the next candidate.
  auto backend = p.row.make({c.options, p.python, static_cast<std::size_t>(c.prestart)});
  if (p.sol) backend = make_workloads_backend(std::move(backend), *p.sol);
  const std::vector<EvalResult> judged = backend->judge_all(p.candidates);
  const bool all_correct =
      std::all_of(judged.begin(), judged.end(), [](const EvalResult& r) { return r.correct; });
  std::vector<nlohmann::json> results;
  for (const auto& r : judged) results.push_back(r.to_json());
  if (!c.export_path.empty()) {
    if (!all_correct) {
      spdlog::warn("not exported: the candidate is not correct");
    } else {
      backend->export_for_harness(p.candidates.front(), c.export_path);
      spdlog::info("exported {} to {}", p.candidates.front().string(), c.export_path);
    }
  }
  return report(c, results, all_correct);
}

}  // namespace

void register_eval(CLI::App& app, Globals& /*globals*/, Action& action) {
  auto c = std::make_shared<EvalCommand>();
  auto* eval = app.add_subcommand(
      "eval",
      "Judge candidates: build each, verify it against the problem over several random seeds "
      "with the anti-cheat checks, and time it against PyTorch eager. Exit 0 only when every "
      "candidate is correct, 1 when one is wrong or cheats, 2 when the problem is unusable");
  add_eval_options(eval, *c);
  eval->callback([&action, c] { action = [c] { return run_eval(*c); }; });
}

}  // namespace mblast::cli
