#include "opencl/opencl_backend.hpp"

#include <cstdlib>
#include <fstream>
#include <functional>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/remote.hpp"
#include "mblast/support.hpp"
#include "opencl/scratch_dir.hpp"

namespace mblast::opencl {

namespace {

namespace fs = std::filesystem;

std::string tail(const std::string& text, std::size_t max_chars = 2000) {
  return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

// Set in the child's environment. A child that finds it set was started from a binary that is
// not mblast (a test binary re-running itself, say) and would start another one, and so on.
constexpr const char* kChildMarker = "MBLAST_OPENCL_RUNNER_CHILD";

// What the child runs: a candidate (--candidate FILE) or a library call (--gemm FILE).
struct ChildJob {
  std::string flag;
  fs::path file;
  std::string remote_name;  // the file's name in a remote working folder
  std::string subject;      // what runs, for the errors: "the candidate", "CLBlast"
  bool is_candidate() const { return flag == "--candidate"; }
};

ProcessSpec child_spec(const ChildJob& job, const BundleSet& bundles, const OpenClOptions& options,
                       const fs::path& out_dir) {
  const fs::path binary = options.binary();
  ProcessSpec spec;
  spec.argv = {binary.string(),
               "internal",
               "opencl-run",
               job.flag,
               fs::absolute(job.file).string(),
               "--out",
               out_dir.string(),
               "--runs",
               std::to_string(options.runs),
               "--device",
               options.device};
  for (const auto& file : bundles.files) {
    spec.argv.push_back("--bundle");
    spec.argv.push_back(fs::absolute(file).string());
  }
  spec.env[kChildMarker] = "1";
  spec.timeout = options.timeout;
  return spec;
}

// The child's one JSON line, if it wrote one.
nlohmann::json report_of(const ProcessResult& result) {
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  return report.is_object() ? report : nlohmann::json();
}

NativeRunResult from_report(const nlohmann::json& report, const fs::path& out_dir) {
  if (report.contains("setup_error")) {
    throw Error(static_cast<ExitCode>(report.value("exit_code", 1)),
                report.value("setup_error", std::string()), report.value("hint", std::string()));
  }
  NativeRunResult run;
  run.error_kind = report.value("error_kind", std::string());
  run.error = report.value("error", std::string());
  run.timing = report.value("timing", nlohmann::json::object());
  run.device_name = report.value("device", std::string());
  run.compute_units = report.value("compute_units", 0);
  run.build_seconds = report.value("build_seconds", 0.0);
  run.run_seconds = report.value("run_seconds", 0.0);
  run.details = {{"build_log", report.value("build_log", std::string())},
                 {"launches", report.value("launches", nlohmann::json::array())}};
  for (const auto& name : report.value("outputs", nlohmann::json::array())) {
    run.outputs.push_back(read_bundle(out_dir / name.get<std::string>()).tensors);
  }
  return run;
}

// What the child's exit says; `outputs_dir` gives the folder holding the outputs its report
// names (pulled from a remote target first).
NativeRunResult interpret(const ProcessResult& result, const ChildJob& job,
                          const OpenClOptions& options,
                          const std::function<fs::path(const nlohmann::json&)>& outputs_dir) {
  NativeRunResult run;
  if (result.timed_out) {
    run.error_kind = "timeout";
    run.error = job.subject + " did not finish within " + std::to_string(options.timeout.count()) +
                " s and was killed" +
                (job.is_candidate() ? ": an endless loop, work-items waiting at a barrier that "
                                      "others never reach, or far too much work"
                                    : "");
    return run;
  }
  if (result.term_signal != 0) {
    run.error_kind = "crash";
    run.error =
        job.subject + " crashed the OpenCL runner (" + result.describe() + ")" +
        (job.is_candidate() ? ": look for out-of-bounds or null pointer accesses in the kernels"
                            : "");
    if (!result.err.empty()) run.error += "\nrunner stderr:\n" + tail(result.err);
    return run;
  }
  const nlohmann::json report = report_of(result);
  if (report.is_null()) {
    // Without a report the runner died inside the driver, which candidates can cause too.
    run.error_kind = "crash";
    run.error = "the OpenCL runner stopped without a report (" + result.describe() + "):\n" +
                tail(result.err);
    return run;
  }
  return from_report(report, outputs_dir(report));
}

NativeRunResult run_on_target(const ChildJob& job, const BundleSet& bundles,
                              const OpenClOptions& options) {
  auto target = make_remote_target(options.remote);
  const RemoteWorkdir dir(*target);
  const bool here = target->name() == "local";
  std::vector<std::string> argv = {here ? options.binary().string() : options.remote_mblast,
                                   "internal",
                                   "opencl-run",
                                   job.flag,
                                   dir / job.remote_name,
                                   "--out",
                                   dir / "out",
                                   "--runs",
                                   std::to_string(options.runs),
                                   "--device",
                                   options.device};
  target->push(job.file, dir / job.remote_name);
  for (std::size_t i = 0; i < bundles.files.size(); ++i) {
    const std::string remote = dir / "seed-" + std::to_string(i) + ".mbtb";
    target->push(bundles.files[i], remote);
    argv.push_back("--bundle");
    argv.push_back(remote);
  }
  const ScratchDir local;
  const ProcessResult result = target->run(argv, options.timeout);
  return interpret(result, job, options, [&](const nlohmann::json& report) {
    for (const auto& name : report.value("outputs", nlohmann::json::array())) {
      const std::string file = name.get<std::string>();
      target->pull(dir / "out/" + file, local.path() / file);
    }
    return local.path();
  });
}

NativeRunResult run_job(const ChildJob& job, const BundleSet& bundles,
                        const OpenClOptions& options) {
  if (std::getenv(kChildMarker) != nullptr) {
    throw job_error("the OpenCL runner was started from a binary that is not mblast",
                    "set OpenClOptions::mblast_binary or $MBLAST_BINARY to the mblast executable");
  }
  if (bundles.files.empty()) {
    throw input_error("no tensor bundle to run on",
                      "make the problem's bundles first (make_bundles)");
  }
  if (!options.remote.empty()) return run_on_target(job, bundles, options);
  const ScratchDir out_dir;
  const ProcessResult result = run_process(child_spec(job, bundles, options, out_dir.path()));
  return interpret(result, job, options, [&](const nlohmann::json&) { return out_dir.path(); });
}

}  // namespace

std::filesystem::path OpenClOptions::binary() const {
  return mblast_binary.empty() ? mblast::mblast_binary() : mblast_binary;
}

NativeRunResult run_opencl_candidate(const fs::path& candidate, const BundleSet& bundles,
                                     const OpenClOptions& options) {
  return run_job({"--candidate", candidate, "candidate.cl", "the candidate"}, bundles, options);
}

NativeRunResult run_opencl_gemm(const GemmSpec& spec, const BundleSet& bundles,
                                const OpenClOptions& options) {
  const ScratchDir dir;
  const fs::path file = dir / "gemm.json";
  std::ofstream(file) << spec.to_json().dump() << "\n";
  return run_job({"--gemm", file, "gemm.json", clblast_version()}, bundles, options);
}

}  // namespace mblast::opencl
