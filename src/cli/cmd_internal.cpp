// `mblast internal ...`: hidden subcommands that mblast runs in child processes of its own.
//   opencl-run   runs one OpenCL candidate on tensor bundles (backends/opencl/opencl_child.hpp)
//   eval-server  the eval server's loop (mblast/eval_server.hpp)
#include "cli/app.hpp"
#include "cuda/eval_server.hpp"
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

  struct ServerArgs {
    std::string socket, python, identity;
  };
  auto server = std::make_shared<ServerArgs>();
  auto* eval_server = internal->add_subcommand("eval-server", "Serve `mblast eval` requests");
  eval_server->add_option("--socket", server->socket, "Unix socket to listen on")->required();
  eval_server->add_option("--python", server->python, "Python with PyTorch for the workers")
      ->required();
  eval_server->add_option("--identity", server->identity, "The configuration it serves")
      ->required();
  eval_server->callback([&action, server] {
    action = [server] { return run_eval_server(server->socket, server->python, server->identity); };
  });
}

}  // namespace mblast::cli
