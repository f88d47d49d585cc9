#include "opencl/opencl_child.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "mblast/error.hpp"
#include "native/bundle.hpp"
#include "opencl/clblast_gemm.hpp"
#include "opencl/opencl_runner.hpp"

namespace mblast::opencl {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read " + path.string(), "check the path");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Keeps the real stdout for the report and sends everything else written there (OpenCL printf
// in a kernel, driver chatter) to stderr, so that the report stays one clean JSON object.
class ReportChannel {
 public:
  ReportChannel() {
    std::fflush(stdout);
    fd_ = ::dup(STDOUT_FILENO);
    if (fd_ < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      throw job_error("cannot redirect stdout of the OpenCL runner");
    }
  }
  ~ReportChannel() { ::close(fd_); }
  ReportChannel(const ReportChannel&) = delete;
  ReportChannel& operator=(const ReportChannel&) = delete;

  void send(const nlohmann::json& report) const {
    const std::string text = report.dump() + "\n";
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
      if (n <= 0) return;  // the parent went away; nobody is left to tell
      written += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_ = -1;
};

GemmSpec read_gemm(const fs::path& path) {
  const auto record = nlohmann::json::parse(read_text(path), nullptr, false);
  if (record.is_discarded()) throw input_error(path.string() + " is not JSON", "check the file");
  return GemmSpec::from_json(record);
}

nlohmann::json run_and_save(const ChildRequest& request) {
  std::vector<Bundle> bundles;
  for (const auto& path : request.bundles) bundles.push_back(read_bundle(path));
  fs::create_directories(request.out_dir);
  RunSettings settings;
  settings.device = request.device;
  settings.runs = request.runs;
  const RunReport report = request.gemm.empty()
                               ? run_in_process(read_text(request.candidate), bundles, settings)
                               : run_clblast_in_process(read_gemm(request.gemm), bundles, settings);
  nlohmann::json json = report.to_json();
  json["outputs"] = nlohmann::json::array();
  for (std::size_t i = 0; i < report.outputs.size(); ++i) {
    const std::string name = "output-" + std::to_string(i) + ".mbtb";
    write_bundle(request.out_dir / name, Bundle{report.outputs[i]});
    json["outputs"].push_back(name);
  }
  return json;
}

}  // namespace

int run_child(const ChildRequest& request) {
  // Whatever kills the driver (even SIGKILL, which leaves no chance to kill this process group)
  // must not leave a hung kernel spinning here.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return static_cast<int>(ExitCode::job_failed);  // orphaned already
  const ReportChannel channel;
  try {
    channel.send(run_and_save(request));
    return 0;
  } catch (const Error& e) {
    const int code = static_cast<int>(e.code());
    channel.send({{"setup_error", e.what()}, {"hint", e.hint()}, {"exit_code", code}});
    return code;
  } catch (const std::exception& e) {  // e.g. the output folder cannot be written
    const int code = static_cast<int>(ExitCode::job_failed);
    channel.send({{"setup_error", e.what()}, {"hint", ""}, {"exit_code", code}});
    return code;
  }
}

}  // namespace mblast::opencl
