#include "cli/app.hpp"
#include "mblast/backend.hpp"

namespace mblast::cli {

void add_target_options(CLI::App* command, const TargetFlags& flags) {
  std::vector<std::string> names;
  std::string backends, devices;
  for (const auto& row : backend_registry()) {
    names.push_back(row.traits.name);
    backends += (backends.empty() ? "" : "; ") + row.traits.name + ": " + row.traits.title;
    devices += (devices.empty() ? "" : "; ") + row.traits.name + ": " + row.traits.devices_help;
  }
  command->add_option("--backend", flags.backend, backends)->check(CLI::IsMember(names));
  command->add_option("--device", flags.device, devices);
  command->add_option("--remote", flags.remote,
                      "opencl, rvv: run candidates on another machine: ssh:[USER@]HOST or "
                      "adb:SERIAL (opencl needs mblast there, see --remote-mblast; rvv pushes the "
                      "static executable and times it by wall clock), or local to test that path");
  command->add_option("--remote-prefix", flags.remote_prefix,
                      "rvv with --remote: run the executable through this command on the target "
                      "(e.g. \"qemu-riscv64 -cpu rv64,v=true,vlen=256\" to rehearse without a "
                      "board)");
  command->add_option(
      "--remote-mblast", flags.remote_mblast,
      "opencl: the mblast binary on the --remote target (default: mblast on its PATH)");
  command->add_option("--vlen", flags.vlen, "rvv: vector length QEMU emulates (default 256)")
      ->check(CLI::IsMember({64, 128, 256, 512, 1024}));
}

}  // namespace mblast::cli
