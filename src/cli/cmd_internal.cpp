// `mblast internal ...`: hidden subcommands that mblast runs in child processes of its own.
//   opencl-run   runs one OpenCL candidate on tensor bundles (backends/opencl/opencl_child.hpp)
#include "cli/app.hpp"
#include "opencl/opencl_child.hpp"

namespace mblast::cli {

void register_internal(CLI::App& app, Globals& /*globals*/, Action& action) {
  auto* internal = app.add_subcommand("internal", "mblast's own child processes");
  internal->group("");  // hidden from --help: not for people
  internal->require_subcommand(1);

  auto request = std::make_shared<opencl::ChildRequest>();
  auto* opencl_run = internal->add_subcommand(
      "opencl-run", "Run an OpenCL candidate on tensor bundles; one JSON report on stdout");
  opencl_run->add_option("--candidate", request->candidate, "The candidate .cl file")->required();
  opencl_run->add_option("--bundle", request->bundles, "Tensor bundles, in seed order")->required();
  opencl_run->add_option("--out", request->out_dir, "Folder for output-<i>.mbtb")->required();
  opencl_run->add_option("--runs", request->runs, "Timed runs on the first bundle")
      ->check(CLI::Range(0, 1000000));
  opencl_run->add_option("--device", request->device, "cpu, gpu, P:D or part of a device name");
  opencl_run->callback(
      [&action, request] { action = [request] { return opencl::run_child(*request); }; });
}

}  // namespace mblast::cli
