#include "cuda/cuda_backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cuda/compile_cache.hpp"
#include "cuda/cuda_eval.hpp"
#include "cuda/eval_server.hpp"
#include "cuda/primer.hpp"
#include "cuda/worker_pool.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/probe.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "mblast/support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;

// Tracing the Model and timing its ops once (mblast_regions); a model that takes longer is kept
// whole.
constexpr std::chrono::seconds kRegionsTimeout{300};
// mblast_builtin's exit code for a transform that would change nothing (NOTHING_TO_CHANGE there).
constexpr int kNothingToChange = 3;

// A CUDA worker takes longer to start (PyTorch, a CUDA context, torch.compile's stack: 10-15 s on
// the H200) than a compiled step of the loop takes to use one, so two are kept ahead there.
std::size_t workers_ahead(const std::string& device) { return is_cuda_device(device) ? 2 : 1; }
// Two fast steps in a row still outrun two (level3/8_ResNetBasicBlock on the H200, call 84: a
// cuDNN-autotuning step of 4.7 s, a channels-last step of 1.3 s, then 6.1 s waiting for a worker):
// each wait lets one more be kept ahead, up to this many, as the eval server does.
constexpr std::size_t kMostWorkersAheadOnGpu = 4;
// A prebuild runs the candidate beside the one being judged, each within about twice eager's peak
// memory (the judge's budget): up to this much eager memory both fit an 80 GB card with room to
// spare.
constexpr double kMostEagerBytesToPrebuild = 8.0 * (1u << 30);

class CudaBackend final : public Backend {
 public:
  CudaBackend(BackendTraits traits, const BackendContext& context)
      : traits_(std::move(traits)),
        options_(context.options),
        python_(context.python),
        prestarted_(context.prestarted > 0 ? context.prestarted : workers_ahead(options_.device)) {}

  const BackendTraits& traits() const override { return traits_; }

  std::optional<EvalResult> measured_baseline() override { return std::nullopt; }

  std::string hardware(const EvalResult& baseline) override {
    const std::string name = baseline.device_name.empty() ? "unknown" : baseline.device_name;
    return options_.device == "cpu" ? "cpu: " + name : name;
  }

  Artifact build(const fs::path& candidate) override { return build_artifact(options_, candidate); }

  EvalResult evaluate(const Artifact& artifact, bool compile_baseline) override {
    return judged_on(options_.problem, artifact, compile_baseline);
  }

  std::optional<EvalResult> evaluate_on(const fs::path& problem, const Artifact& artifact,
                                        bool compile_baseline) override {
    return judged_on(problem, artifact, compile_baseline);
  }

  // Each request judges the workloads from the first not judged yet to the end; a worker that
  // answers for fewer (what it prepared filled its memory budget) leaves the rest to the next.
  std::optional<std::vector<EvalResult>> evaluate_workloads(const std::vector<fs::path>& problems,
                                                            const Artifact& artifact,
                                                            bool compile_baseline) override {
    if (!problems.empty() && problems.front() == options_.problem) {
      // What a prebuild evaluates ahead: the request it is to be taken over by.
      options_.workloads.assign(problems.begin() + 1, problems.end());
    }
    const bool against_itself = !problems.empty() && artifact.candidate == problems.front();
    std::vector<EvalResult> results;
    while (results.size() < problems.size() && (results.empty() || results.back().correct)) {
      const auto first = problems.begin() + static_cast<std::ptrdiff_t>(results.size());
      const std::vector<fs::path> rest(first + 1, problems.end());
      Artifact judged_artifact = artifact;
      if (against_itself) judged_artifact.candidate = *first;  // the worker: each its own file
      // Each answer holds at least its first workload's result: the loop advances.
      for (auto& judged :
           split_workloads(judged_json(*first, judged_artifact, compile_baseline, rest)))
        results.push_back(EvalResult::from_json(judged));
    }
    remember_eager_peak(results);
    return results;
  }

  std::vector<EvalResult> judge_all(const std::vector<fs::path>& candidates) override {
    std::optional<std::vector<nlohmann::json>> results;
    if (via_server()) {
      results = evaluate_via_server(options_, candidates, python_);
    }
    if (!results) {
      WorkerPool pool(eval_worker_config(options_, python_),
                      std::min<std::size_t>(prestarted_, candidates.size()));
      results = evaluate_all(options_, candidates, pool);
    }
    std::vector<EvalResult> typed;
    for (const auto& r : *results) typed.push_back(EvalResult::from_json(r));
    return typed;
  }

  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    if (files.empty()) throw input_error("the answer held no candidate file");
    return files.front().second + "\n";
  }

  Builtin builtin(const std::string& transform, const fs::path& current, bool current_is_reference,
                  const std::vector<std::string>& region_ops) override {
    const fs::path base = current_is_reference ? options_.problem : current;
    Builtin made = builtin_candidate(python_, transform, base, !current_is_reference, region_ops);
    if (made.source && (current_is_reference || trusted_.count(candidate_text_key(current))))
      trusted_.insert(sha256_hex(*made.source));
    return made;
  }

  std::map<std::string, std::string> nothing_to_change(
      const std::vector<std::string>& transforms) override {
    return builtins_with_nothing_to_change(python_, transforms, options_.problem);
  }

  std::optional<ProgramRegions> program_regions() override {
    try {
      return ProgramRegions::from_json(
          run_regions_worker(options_.problem, options_.device, kRegionsTimeout));
    } catch (const Error& e) {
      ProgramRegions none;
      none.failure = e.what();
      return none;
    }
  }

  bool export_for_harness(const fs::path& best, const fs::path& out) override {
    export_kernelbench(best, out, python_);
    return true;
  }

  void set_deadline(std::chrono::steady_clock::time_point until) override {
    options_.until = until;
  }

  bool host_idle_while_judging() const override { return is_cuda_device(options_.device); }

  void stop_prestarting() override {
    if (workers_) workers_->set_prestarted(0);
  }

  // A built-in candidate evaluated ahead up to its first call (primer.hpp): through the eval
  // server where this run judges through it, so that its timing windows pause it and its
  // evaluation finds it; else in this backend's own pool. Only a GPU's, and only mblast's own
  // candidates (trusted code).
  void prebuild(const fs::path& candidate) override {
    if (!is_cuda_device(options_.device) || !trusted_.count(candidate_text_key(candidate))) return;
    if (!eager_peak_bytes_ || *eager_peak_bytes_ > kMostEagerBytesToPrebuild) {
      spdlog::debug("no prebuild: eager's peak memory is {}",
                    eager_peak_bytes_ ? "too large" : "unknown");
      return;
    }
    EvalOptions options = options_;
    options.candidate = candidate;
    options.compile_baseline = false;  // as the loop's steps are judged
    options.keep_compile_cache = true;
    if (via_server()) {
      ahead_via_server_ =
          evaluate_ahead_via_server(options, candidate, python_, false, step_) || ahead_via_server_;
      return;
    }
    if (!primer_) primer_ = std::make_unique<Primer>(workers());
    evaluate_ahead(options, workers(), *primer_, step_);
  }

  void begin_step(int step) override {
    step_ = step;
    if (ahead_via_server_) begin_step_via_server(options_, python_, step);
    if (primer_) primer_->begin_step(fs::absolute(options_.problem).string(), step);
  }

  void stop_prebuilding() override {
    if (ahead_via_server_) evaluate_ahead_via_server(options_, options_.problem, python_, true);
    ahead_via_server_ = false;
    if (primer_) primer_->cancel();
  }

 private:
  EvalResult judged_on(const fs::path& problem, const Artifact& artifact, bool compile_baseline) {
    return remembered(EvalResult::from_json(judged_json(problem, artifact, compile_baseline, {})));
  }

  nlohmann::json judged_json(const fs::path& problem, const Artifact& artifact,
                             bool compile_baseline, const std::vector<fs::path>& workloads) {
    EvalOptions options = options_;
    options.problem = problem;
    options.workloads = workloads;
    options.candidate = artifact.candidate;
    options.compile_baseline = compile_baseline;
    options.keep_compile_cache = trusted_.count(candidate_text_key(artifact.candidate)) > 0;
    // Through the eval server, whose workers outlive this run: the runs of a batch after the
    // first find one started. It rebuilds the candidate from the shared build cache (a hit); a
    // failed build needs no worker at all.
    if (!artifact.error && via_server()) {
      if (auto results = evaluate_via_server(options, {artifact.candidate}, python_)) {
        return results->front();
      }
    }
    // The loop's evaluations keep a worker started ahead for the next one.
    return evaluate_artifact(options, artifact, workers(), primer_.get());
  }

  // Eager's peak GPU memory, as the judge last reported it (the largest of the workloads judged
  // together): a prebuild runs beside the judged candidate, so only small problems get one.
  void remember_eager_peak(const std::vector<EvalResult>& results) {
    std::optional<double> most;
    for (const auto& result : results) {
      const auto memory = result.extra.find("memory");
      if (memory == result.extra.end() || !memory->is_object()) continue;
      const auto peak = memory->value("eager_peak_bytes", nlohmann::json());
      if (peak.is_number()) most = std::max(most.value_or(0.0), peak.get<double>());
    }
    if (most) eager_peak_bytes_ = most;
  }
  EvalResult remembered(EvalResult result) {
    remember_eager_peak({result});
    return result;
  }

  bool via_server() const { return options_.use_server && eval_server_wanted(options_); }

  // Started on first use, so that `mblast eval` through the eval server starts none here.
  WorkerPool& workers() {
    if (!workers_) {
      workers_ = std::make_unique<WorkerPool>(eval_worker_config(options_, python_), prestarted_);
      if (is_cuda_device(options_.device))
        workers_->set_growth_limit(std::max(prestarted_, kMostWorkersAheadOnGpu));
    }
    return *workers_;
  }

  BackendTraits traits_;
  EvalOptions options_;
  fs::path python_;
  std::size_t prestarted_;
  std::unique_ptr<WorkerPool> workers_;
  std::unique_ptr<Primer> primer_;  // after workers_, so destroyed before it
  bool ahead_via_server_ = false;
  int step_ = 0;  // the loop's step begun last: the one a prebuild is guessed in
  std::optional<double> eager_peak_bytes_;
  // Hashes of the candidate texts this backend's built-ins made from the problem's own code, or
  // from such a candidate: the ones whose compile caches are trusted (compile_cache.hpp).
  std::set<std::string> trusted_;
};

AgentFormat cuda_format(const std::string& device) {
  if (device == "cpu") {
    return {"backend_cuda_cpu", "plain PyTorch", {{"model_new.py", "python"}}, false, true};
  }
  return {"backend_cuda", "custom CUDA kernels", {{"model_new.py", "python"}}, true, true};
}

void check_cuda_device(const std::string& device) {
  if (device != "cpu" && device != "cuda" && device.rfind("cuda:", 0) != 0) {
    throw input_error("--device " + device + " is not a CUDA device",
                      "use cuda, cuda:N or cpu with --backend cuda");
  }
}

}  // namespace

BackendTraits cuda_traits() {
  BackendTraits t;
  t.name = "cuda";
  t.title = "CUDA kernels in Python candidates (default)";
  t.candidate_extension = ".py";
  t.default_device = "cuda";
  t.devices_help = "cuda, cuda:N or cpu (plain PyTorch candidates on the CPU)";
  t.builtins_need_a_candidate = false;
  t.native = false;
  t.harness = "KernelBench";
  t.compile_transform = "torch_compile";
  t.agent_format = cuda_format;
  t.check_device = check_cuda_device;
  return t;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendTraits& traits,
                                           const BackendContext& context) {
  return std::make_unique<CudaBackend>(traits, context);
}

std::map<std::string, std::string> builtins_with_nothing_to_change(
    const fs::path& python, const std::vector<std::string>& transforms, const fs::path& problem) {
  if (transforms.empty()) return {};
  ProcessSpec spec;
  spec.argv = {python.string(),
               "-m",
               "mblast_builtin",
               "--check",
               fmt::format("{}", fmt::join(transforms, ",")),
               fs::absolute(problem).string()};
  spec.env["PYTHONPATH"] = worker_directory().string();
  spec.timeout = std::chrono::seconds(60);
  try {
    const ProcessResult result = run_process(spec);
    if (result.ok())
      return nlohmann::json::parse(result.out).get<std::map<std::string, std::string>>();
    spdlog::debug("mblast_builtin --check: {}: {}", result.describe(), result.err);
  } catch (const std::exception& e) {  // unknown: each transform finds out in its own step
    spdlog::debug("mblast_builtin --check: {}", e.what());
  }
  return {};
}

Backend::Builtin builtin_candidate(const fs::path& python, const std::string& transform,
                                   const fs::path& base, bool over,
                                   const std::vector<std::string>& region_ops) {
  ProcessSpec spec;
  spec.argv = {python.string(), "-m", "mblast_builtin"};
  if (over) spec.argv.push_back("--over");
  if (!region_ops.empty()) {
    spec.argv.push_back("--region");
    spec.argv.push_back(fmt::format("{}", fmt::join(region_ops, ",")));
  }
  spec.argv.push_back(transform);
  spec.argv.push_back(fs::absolute(base).string());
  spec.env["PYTHONPATH"] = worker_directory().string();
  spec.timeout = std::chrono::seconds(60);
  const ProcessResult result = run_process(spec);
  if (!result.timed_out && result.exit_code == kNothingToChange) {
    return {std::nullopt, probing::trim(result.err)};
  }
  if (!result.ok()) {
    throw job_error("the built-in transform " + transform + " could not be generated (" +
                        result.describe() + "): " + result.err,
                    "report this with the problem file; built-ins need no LLM and should not fail");
  }
  return {result.out, ""};
}

}  // namespace mblast
