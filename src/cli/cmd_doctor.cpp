// `mblast doctor`: what this machine can do, and how to fix what is missing.
#include <iostream>

#include "cli/app.hpp"
#include "mblast/doctor.hpp"

namespace mblast::cli {

void register_doctor(CLI::App& app, Globals& globals, Action& action) {
  auto json = std::make_shared<bool>(false);
  auto* doctor = app.add_subcommand(
      "doctor",
      "Check what this machine can do: CUDA compiler and GPU, python3 with torch, OpenCL "
      "devices, the RISC-V vector toolchain and QEMU, the LLM provider, the knowledge base. "
      "Exit 0 when the CPU backends can run, 1 otherwise");
  doctor->add_flag("--json", *json, "Print JSON for scripts instead of text");
  doctor->callback([&action, &globals, json] {
    action = [&globals, json] {
      DoctorOptions options;
      options.kb_path = globals.kb();
      auto checks = run_doctor(options);
      if (*json) {
        std::cout << doctor_to_json(checks).dump(2) << "\n";
      } else {
        std::cout << doctor_to_text(checks);
      }
      bool required_ok = true;
      for (const auto& check : checks) {
        if (check.required_for_cpu_backends && !check.ok) required_ok = false;
      }
      return required_ok ? 0 : 1;
    };
  });
}

}  // namespace mblast::cli
