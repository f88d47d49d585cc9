// `mblast internal ...`: hidden subcommands that mblast runs in child processes of its own, as
// the backends' registry rows declare them (the OpenCL runner, the eval server).
#include <map>
#include <memory>

#include "backend_registry.hpp"
#include "cli/app.hpp"
#include "mblast/backend.hpp"

namespace mblast::cli {

void register_internal(CLI::App& app, Globals& /*globals*/, Action& action) {
  auto* internal = app.add_subcommand("internal", "mblast's own child processes");
  internal->group("");  // hidden from --help: not for people
  internal->require_subcommand(1);
  for (const auto& row : backend_registry()) {
    for (const auto& command : row.internal) {
      auto* sub = internal->add_subcommand(command.name, command.help);
      auto values = std::make_shared<std::map<std::string, std::vector<std::string>>>();
      for (const auto& option : command.options) {
        sub->add_option(option, (*values)[option], option.substr(2));
      }
      sub->callback([&action, values, run = command.run] {
        action = [values, run] {
          std::multimap<std::string, std::string> flat;
          for (const auto& [name, list] : *values) {
            for (const auto& value : list) flat.emplace(name, value);
          }
          return run(flat);
        };
      });
    }
  }
}

}  // namespace mblast::cli
