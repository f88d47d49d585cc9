#include "backend_registry.hpp"
#include "cli/app.hpp"
#include "mblast/backend.hpp"

#include <set>

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
  std::set<std::string> added;
  for (const auto& row : backend_registry()) {
    for (const auto& option : row.traits.options) {
      if (!added.insert(option.flag).second) continue;  // shared by several backends
      auto* added_option = command->add_option(option.flag, flags.target[option.key], option.help);
      if (!option.allowed.empty()) added_option->check(CLI::IsMember(option.allowed));
    }
  }
}

void add_ncu_kernels_option(CLI::App* command, int& ncu_kernels) {
  command
      ->add_option("--ncu-kernels", ncu_kernels,
                   "With --profile ncu: the kernels Nsight Compute profiles per forward, at most "
                   "(default 100); each costs several replays. A forward with more has its first "
                   "ones profiled")
      ->check(CLI::Range(1, 100000));
}

}  // namespace mblast::cli
