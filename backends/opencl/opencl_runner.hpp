#pragma once
// Runs an OpenCL candidate in this process: builds it, runs it on tensor bundles and times it.
// Candidate kernels can hang or crash the process that runs them (PoCL runs them on the host's
// threads), so mblast calls this only in a child (`mblast internal opencl-run`, see
// opencl_backend.hpp).
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "native/bundle.hpp"
#include "opencl/cl.hpp"

namespace mblast::opencl {

struct RunSettings {
  std::string device;  // see select_device
  int runs = 30;       // timed forward passes, after the warm-up ones
  int warmup_runs = 3;
};

struct RunReport {
  std::string error_kind;  // "", "compile" or "candidate_runtime"
  std::string error;
  std::string build_log;  // the compiler's log verbatim (warnings too when the build passed)
  std::string device_name;
  int compute_units = 0;  // of the device: PoCL runs one thread per compute unit
  // {"median_ms", "p10_ms", "p90_ms", "mean_ms", "runs"} of whole forward passes: the first
  // launch's start to the last launch's end, from profiling events.
  nlohmann::json timing = nlohmann::json::object();
  // Per launch in plan order: ForwardPass::launch_info() plus "median_ms" when timed.
  nlohmann::json launches = nlohmann::json::array();
  double build_seconds = 0;
  double run_seconds = 0;
  std::vector<std::vector<Tensor>> outputs;  // per bundle

  nlohmann::json to_json() const;  // everything but the outputs
};

// The device one child run works on: its context and a queue with profiling enabled.
struct Session {
  cl::Device device;
  cl::Context context;
  cl::CommandQueue queue;
};

// Opens the device `settings.device` names and runs `body` on it. The run's own failures
// (CandidateFailure, or a cl::Error once the device is open) become the report's error_kind and
// error, with no outputs or timing left. A device spec that matches no device throws input_error.
RunReport run_guarded(const std::vector<Bundle>& bundles, const RunSettings& settings,
                      const std::function<void(const Session&, RunReport&)>& body);

// Throws CandidateFailure when a timed run left an output NaN (poisoned) that the first run wrote:
// every forward pass must compute every output.
void check_still_written(const std::vector<Tensor>& first, const std::vector<Tensor>& last);

// Builds the candidate once, runs it once on every bundle (outputs poisoned beforehand) and times
// it on the first. The candidate's failures are reported; a device spec that matches no device
// throws input_error.
RunReport run_in_process(const std::string& candidate_text, const std::vector<Bundle>& bundles,
                         const RunSettings& settings);

// {"median_ms", "p10_ms", "p90_ms", "mean_ms", "runs"} of samples in milliseconds.
nlohmann::json summarize_ms(std::vector<double> samples);

}  // namespace mblast::opencl
