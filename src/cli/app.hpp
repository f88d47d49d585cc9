#pragma once
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace mblast::cli {

// Options every subcommand sees.
struct Globals {
  int verbosity = 0;  // -v: debug, -vv: trace
  bool quiet = false;
  std::string kb_path;  // --kb; empty means default_kb_path()

  std::filesystem::path kb() const;
};

// A subcommand's work; returns the process exit code. Throws mblast::Error for failures.
using Action = std::function<int()>;

// Each registers its subcommand on `app` and stores what to run in `action` when it is chosen.
void register_kb(CLI::App& app, Globals& globals, Action& action);
void register_doctor(CLI::App& app, Globals& globals, Action& action);
void register_eval(CLI::App& app, Globals& globals, Action& action);
void register_llm(CLI::App& app, Globals& globals, Action& action);
void register_optimize(CLI::App& app, Globals& globals, Action& action);
void register_report(CLI::App& app, Globals& globals, Action& action);
void register_regions(CLI::App& app, Globals& globals, Action& action);
void register_internal(CLI::App& app, Globals& globals, Action& action);  // hidden

// --backend, --device and every backend's own options (the registry's), as `eval` and
// `optimize` both take them.
struct TargetFlags {
  std::string& backend;
  std::string& device;
  std::map<std::string, std::string>& target;
};
void add_target_options(CLI::App* command, const TargetFlags& flags);
// --ncu-kernels, which `eval` and `optimize` both take with --profile ncu.
void add_ncu_kernels_option(CLI::App* command, int& ncu_kernels);

// Validators whose messages say what was wrong in words ("must be greater than 0, got 0"), not
// CLI11's ranges over the largest double.
CLI::Validator positive_number();
CLI::Validator non_negative_number();

// Why a command line chose no subcommand, with the nearest known name when a word is a typo or two
// away ("no command 'optimise' (did you mean optimize?)"), or the commands a level needs one of
// (missing_subcommand); empty when neither applies.
std::string unknown_command_hint(const CLI::App& app, int argc, char** argv,
                                 bool missing_subcommand);

// Parses argv, runs the chosen subcommand, maps errors to exit codes (0 / 1 / 2).
int run(int argc, char** argv);

}  // namespace mblast::cli
