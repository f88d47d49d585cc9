#pragma once
// One target of the loop (docs/ARCHITECTURE.md §3): a backend builds a candidate (an artifact, or
// the error text that stopped it), then verifies, measures and profiles it — the CUDA backend
// serves those three from one worker request, so that reference and candidate stay interleaved in
// one process. Results are typed (EvalResult); failures are data in them, not exceptions.
//
// The registry holds one row per backend with its traits; the CLI, option checks, prompt formats
// and the loop ask it, never a backend's name. Adding a backend is adding a row.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mblast/agent_format.hpp"
#include "mblast/doctor_check.hpp"
#include "mblast/eval_options.hpp"
#include "mblast/eval_result.hpp"
#include "mblast/program_regions.hpp"

namespace mblast {

// One option of a backend's own, on the command line of `eval` and `optimize` and in
// EvalOptions::target under `key`.
struct BackendOption {
  std::string flag;  // "--vlen"
  std::string key;   // "vlen"
  std::string help;
  std::vector<std::string> allowed;  // empty: any value
  // Throws input_error for a value the backend cannot take (checked before a run starts).
  std::function<void(const std::string& value)> check;
};

// What the loop and the CLI know of a backend without running it.
struct BackendTraits {
  std::string name;                 // "cuda" | "opencl" | "rvv"
  std::string title;                // for --help
  std::string candidate_extension;  // ".py", ".cl", ".c"
  std::string default_device;       // "cuda"; "" lets the backend choose
  std::string devices_help;         // what --device takes
  // Its built-ins tune a kernel (so they need a candidate first) rather than wrap a model.
  bool builtins_need_a_candidate = false;
  // Baselines the reference is measured against: "eager" (and "compile"), or native ones.
  bool native = false;
  std::string harness;  // the harness export_for_harness writes for ("KernelBench"); "": none
  // The built-in that is torch.compile of the reference: its evaluation on the reference gives
  // the run's compile baseline (the loop's "compile_ms"); "": the backend has none.
  std::string compile_transform;
  std::function<AgentFormat(const std::string& device)> agent_format;
  std::vector<BackendOption> options;
  // Throws input_error when the device is not one this backend takes.
  std::function<void(const std::string& device)> check_device;
};

// A candidate built and ready to judge: the file, and whatever building it recorded.
struct Artifact {
  std::filesystem::path candidate;
  nlohmann::json builds = nlohmann::json::array();  // per build step: key, ok, cached, seconds
  double build_seconds = 0;
  std::optional<std::string> error;  // the compiler's log when the build failed
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const BackendTraits& traits() const = 0;

  // Backends whose speedups are over fixed baselines (native: PyTorch on the CPU, a naive
  // kernel, plain C) measure them here. nullopt: the baseline is the reference itself, judged as
  // a candidate (Builtin "reference") with torch.compile timed too (CUDA).
  virtual std::optional<EvalResult> measured_baseline() = 0;
  // The hardware id for the KB, from the baseline's result.
  virtual std::string hardware(const EvalResult& baseline) = 0;
  // The problem's source as it is judged, where that is not the problem file (a native
  // backend's --shrink judges it at reduced sizes): what the agents see. nullopt: the file.
  virtual std::optional<std::string> judged_problem_source() { return std::nullopt; }

  virtual Artifact build(const std::filesystem::path& candidate) = 0;
  // Verify, measure and profile a built candidate (a failed build yields its compile error);
  // with compile_baseline, torch.compile of the reference is timed too (CUDA).
  virtual EvalResult evaluate(const Artifact& artifact, bool compile_baseline = false) = 0;
  // The same, judged against another problem file of the same Model (a workload of a
  // SOL-ExecBench problem: other shapes, inputs and tolerance); nullopt where the backend judges
  // only its own problem (native backends, whose bundles are built for one problem).
  virtual std::optional<EvalResult> evaluate_on(const std::filesystem::path& /*problem*/,
                                                const Artifact& /*artifact*/,
                                                bool /*compile_baseline*/) {
    return std::nullopt;
  }
  // A SOL-ExecBench problem's workloads: the artifact judged on each problem file in order (the
  // first is the backend's own problem), stopping at the first it fails; the results of those
  // judged. An artifact of the first problem file itself is each problem against its own file.
  // nullopt where evaluate_on is (native backends). The default calls evaluate_on for each; the
  // CUDA backend judges them in one worker per evaluation, as SOL-ExecBench's harness does, since
  // a worker's start costs more than judging a small workload.
  virtual std::optional<std::vector<EvalResult>> evaluate_workloads(
      const std::vector<std::filesystem::path>& problems, const Artifact& artifact,
      bool compile_baseline);
  EvalResult judge(const std::filesystem::path& candidate, bool compile_baseline = false) {
    return evaluate(build(candidate), compile_baseline);
  }
  // Several candidates of the problem, in order (`mblast eval`): a backend may build them all
  // first and share its workers.
  virtual std::vector<EvalResult> judge_all(const std::vector<std::filesystem::path>& candidates);

  // One candidate file from the files an agent wrote (name -> text, main file first). Throws
  // input_error when they do not make one.
  virtual std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) = 0;
  // The source of built-in technique `transform` applied to `current` (the problem itself when
  // current_is_reference), to the region of `region_ops` only when those are given (the torch.fx
  // ops of one of program_regions' windows); nullopt, with why, when it finds nothing to change.
  struct Builtin {
    std::optional<std::string> source;
    std::string why_not;
  };
  virtual Builtin builtin(const std::string& transform, const std::filesystem::path& current,
                          bool current_is_reference,
                          const std::vector<std::string>& region_ops) = 0;
  // For built-ins that change only the problem's Model ("first" in the catalogue): why each of
  // `transforms` would change nothing in it, "" where it may change something; one left out is
  // unknown. Asked once per run, on another thread while the reference is judged (GPU devices).
  virtual std::map<std::string, std::string> nothing_to_change(
      const std::vector<std::string>& /*transforms*/) {
    return {};
  }
  // True where judging leaves the host's cores idle (the device does the work), so that host work
  // may run beside it without disturbing its timing; false where candidates run on those cores.
  virtual bool host_idle_while_judging() const { return false; }
  // The problem's Model as region windows (the model-level optimizer's slots); nullopt where the
  // backend has none (native backends judge kernels, not PyTorch models).
  virtual std::optional<ProgramRegions> program_regions() { return std::nullopt; }
  // Writes the best candidate in the form its users' harness takes (KernelBench's ModelNew for
  // CUDA); false when the backend has none.
  virtual bool export_for_harness(const std::filesystem::path& best,
                                  const std::filesystem::path& out) = 0;

  // Evaluations still running at `until` are stopped (their result says stopped_by_time_limit).
  virtual void set_deadline(std::chrono::steady_clock::time_point until) = 0;
  // No worker is started ahead any more (the run is ending).
  virtual void stop_prestarting() {}
  // Compiles a candidate the loop expects to judge next while the current one is judged
  // (`optimize --prebuild`): what it compiles lands in caches the candidate's evaluation starts
  // from. A hint: a backend may ignore it (no compile cache, an untrusted candidate).
  virtual void prebuild(const std::filesystem::path& /*candidate*/) {}
  // The loop's step `step` (1, 2, ...) begins: a prebuild hinted from now on is for a later step,
  // and one hinted before is for this step or an earlier one.
  virtual void begin_step(int /*step*/) {}
  // Stops a prebuild in flight (the run is ending).
  virtual void stop_prebuilding() {}
};

// What a backend is made from: the judging options, and the Python with PyTorch that computes
// references (every backend's references come from the PyTorch problem).
struct BackendContext {
  EvalOptions options;
  std::filesystem::path python;
  std::size_t prestarted = 1;  // workers kept started ahead (CUDA); 0: the backend chooses
};

// A hidden `mblast internal NAME --option value ...` command that the backend runs in child
// processes of its own (the OpenCL runner, the eval server). Every option takes one value and may
// repeat; run gets them by name and returns the exit code (throws input_error for bad ones).
struct InternalCommand {
  std::string name;
  std::string help;
  std::vector<std::string> options;
  std::function<int(const std::multimap<std::string, std::string>& values)> run;
};

struct BackendRow {
  BackendTraits traits;
  std::function<std::unique_ptr<Backend>(const BackendContext&)> make;
  // `mblast doctor`: the names of this backend's checks, and the checks the filter wants.
  std::function<std::vector<std::string>()> doctor_names;
  std::function<std::vector<DoctorCheck>(const std::function<bool(const std::string&)>& wanted)>
      doctor;
  std::vector<InternalCommand> internal;
};

// The backends a command may use, in the order --help lists them. The registry
// (backends/backend_registry.hpp) holds them all; the CLI hands them to the core, which depends
// on no backend.
using BackendRows = std::vector<BackendRow>;

// The row named `name`; throws input_error listing the rows' names for any other.
const BackendRow& find_backend(const BackendRows& rows, std::string_view name);
// "cuda, opencl or rvv".
std::string backend_names(const BackendRows& rows, std::string_view last_separator = " or ");
// Throws input_error for a backend option given a value (`target`, by key) that `traits`'s
// backend does not take (--shrink with --backend cuda), naming the rows' backends that do.
void check_target_options(const BackendRows& rows, const BackendTraits& traits,
                          const std::map<std::string, std::string>& target);

}  // namespace mblast
