#include "opencl/opencl_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "mblast/error.hpp"
#include "mblast/support.hpp"
#include "opencl/cl.hpp"
#include "opencl/forward_pass.hpp"
#include "opencl/opencl_candidate.hpp"
#include "opencl/opencl_device.hpp"

namespace mblast::opencl {

namespace {

using Clock = std::chrono::steady_clock;

// OpenCL C 1.2 for every driver; the argument info lets the runner check the plan's arguments.
constexpr const char* kBuildOptions = "-cl-std=CL1.2 -cl-kernel-arg-info";

Candidate parse_or_fail(const std::string& text) {
  try {
    return parse_candidate(text);
  } catch (const Error& e) {
    throw CandidateFailure("compile",
                           std::string(e.what()) + (e.hint().empty() ? "" : " (" + e.hint() + ")"));
  }
}

cl::Program build(const cl::Context& context, const cl::Device& device, const std::string& source,
                  RunReport& report) {
  const auto start = Clock::now();
  cl::Program program(context, source);
  try {
    program.build({device}, kBuildOptions);
  } catch (const cl::Error& e) {
    report.build_seconds = seconds_since(start);
    report.build_log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
    throw CandidateFailure("compile", report.build_log.empty() ? describe(e) : report.build_log);
  }
  report.build_seconds = seconds_since(start);
  report.build_log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device);
  return program;
}

double elapsed_ms(const cl::Event& first, const cl::Event& last) {
  const auto start = first.getProfilingInfo<CL_PROFILING_COMMAND_START>();
  const auto end = last.getProfilingInfo<CL_PROFILING_COMMAND_END>();
  return static_cast<double>(end - start) * 1e-6;
}

void time_passes(ForwardPass& pass, const cl::CommandQueue& queue, const RunSettings& settings,
                 const std::vector<Tensor>& first_outputs, RunReport& report) {
  for (int i = 0; i < settings.warmup_runs; ++i) pass.run(queue);
  std::vector<double> totals;
  std::vector<std::vector<double>> per_launch;
  for (int i = 0; i < settings.runs; ++i) {
    const auto events = pass.run(queue);
    per_launch.resize(events.size());
    totals.push_back(elapsed_ms(events.front(), events.back()));
    for (std::size_t j = 0; j < events.size(); ++j) {
      per_launch[j].push_back(elapsed_ms(events[j], events[j]));
    }
  }
  report.timing = summarize_ms(totals);
  report.launches = pass.launch_info();
  for (std::size_t j = 0; j < per_launch.size(); ++j) {
    report.launches[j]["median_ms"] = summarize_ms(std::move(per_launch[j]))["median_ms"];
  }
  if (settings.runs > 0) check_still_written(first_outputs, pass.read_outputs(queue));
}

Session open_session(const DeviceEntry& device) {
  try {
    cl::Context context(device.device);
    cl::CommandQueue queue(context, device.device, CL_QUEUE_PROFILING_ENABLE);
    return {device.device, context, queue};
  } catch (const cl::Error& e) {
    throw job_error("cannot open the OpenCL device " + device.name + ": " + describe(e),
                    "check the driver with clinfo, or pick another device");
  }
}

void run_candidate(const Session& session, const std::string& text,
                   const std::vector<Bundle>& bundles, const RunSettings& settings,
                   RunReport& report) {
  const Candidate candidate = parse_or_fail(text);
  const auto& [device, context, queue] = session;
  const cl::Program program = build(context, device, candidate.source, report);
  const auto start = Clock::now();
  for (std::size_t b = 0; b < bundles.size(); ++b) {
    ForwardPass pass(context, device, program, candidate.plan, bundles[b]);
    pass.run(queue);
    auto outputs = pass.read_outputs(queue);
    if (const auto changed = pass.changed_inputs(queue); !changed.empty()) {
      throw CandidateFailure("candidate_runtime",
                             "the candidate wrote to " + changed.front() +
                                 ": inputs and parameters are read-only; write results to the "
                                 "outputs or to scratch buffers");
    }
    if (b == 0) time_passes(pass, queue, settings, outputs, report);
    report.outputs.push_back(std::move(outputs));
  }
  report.run_seconds = seconds_since(start);
}

}  // namespace

// Skipping work in later runs (say, returning a result kept from the first) leaves the poisoned
// outputs unwritten.
void check_still_written(const std::vector<Tensor>& first, const std::vector<Tensor>& last) {
  for (std::size_t o = 0; o < first.size(); ++o) {
    for (std::int64_t i = 0; i < first[o].numel(); ++i) {
      const auto index = static_cast<std::size_t>(i);
      if (std::isnan(last[o].f32()[index]) && !std::isnan(first[o].f32()[index])) {
        throw CandidateFailure("candidate_runtime",
                               "a timed run left " + first[o].name + "[" + std::to_string(i) +
                                   "] unwritten (NaN), which the first run wrote: every forward "
                                   "pass must compute every output");
      }
    }
  }
}

nlohmann::json summarize_ms(std::vector<double> samples) {
  if (samples.empty()) return {{"runs", 0}};
  std::sort(samples.begin(), samples.end());
  const auto quantile = [&](double q) {
    const double position = q * static_cast<double>(samples.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const auto above = static_cast<std::size_t>(std::ceil(position));
    return samples[below] + (position - std::floor(position)) * (samples[above] - samples[below]);
  };
  const double sum = std::accumulate(samples.begin(), samples.end(), 0.0);
  return {{"median_ms", quantile(0.5)},
          {"p10_ms", quantile(0.1)},
          {"p90_ms", quantile(0.9)},
          {"mean_ms", sum / static_cast<double>(samples.size())},
          {"runs", samples.size()}};
}

nlohmann::json RunReport::to_json() const {
  return {
      {"error_kind", error_kind},  {"error", error},        {"build_ok", error_kind != "compile"},
      {"build_log", build_log},    {"device", device_name}, {"compute_units", compute_units},
      {"timing", timing},          {"launches", launches},  {"build_seconds", build_seconds},
      {"run_seconds", run_seconds}};
}

RunReport run_guarded(const std::vector<Bundle>& bundles, const RunSettings& settings,
                      const std::function<void(const Session&, RunReport&)>& body) {
  if (bundles.empty()) throw input_error("no tensor bundle to run on");
  RunReport report;
  const DeviceEntry device = select_device(settings.device);
  report.device_name = device.name;
  report.compute_units = static_cast<int>(device.device.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
  const Session session = open_session(device);
  try {
    body(session, report);
  } catch (const CandidateFailure& failure) {
    report.error_kind = failure.kind();
    report.error = failure.what();
  } catch (const cl::Error& e) {
    // The device is open by then; what fails now is the run's doing (a buffer too large for the
    // device, resources its kernels exhaust, ...).
    report.error_kind = "candidate_runtime";
    report.error = describe(e);
  }
  if (!report.error_kind.empty()) {
    report.outputs.clear();
    report.timing = nlohmann::json::object();
    report.launches = nlohmann::json::array();
  }
  return report;
}

RunReport run_in_process(const std::string& candidate_text, const std::vector<Bundle>& bundles,
                         const RunSettings& settings) {
  return run_guarded(bundles, settings, [&](const Session& session, RunReport& report) {
    run_candidate(session, candidate_text, bundles, settings, report);
  });
}

}  // namespace mblast::opencl
