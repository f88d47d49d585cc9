#include "cli/app.hpp"

namespace mblast::cli {

void add_target_options(CLI::App* command, const TargetFlags& flags) {
  command
      ->add_option("--backend", flags.backend,
                   "cuda (default), opencl (OpenCL C kernels with a launch plan, through the ICD "
                   "loader) or rvv (C with RVV intrinsics under QEMU, priced by a deterministic "
                   "cost model)")
      ->check(CLI::IsMember({"cuda", "opencl", "rvv"}));
  command->add_option("--device", flags.device,
                      "cuda: cuda, cuda:N or cpu (plain PyTorch candidates on the CPU, for "
                      "machines without a GPU); opencl: cpu, gpu, P:D or part of the device name");
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
