#include "cli/app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "mblast/error.hpp"
#include "mblast/kb.hpp"

namespace mblast::cli {

std::filesystem::path Globals::kb() const {
  return kb_path.empty() ? default_kb_path() : std::filesystem::path(kb_path);
}

namespace {

void setup_logging(const Globals& globals) {
  auto logger = spdlog::stderr_color_mt("mblast");
  logger->set_pattern("%^[%l]%$ %v");
  spdlog::set_default_logger(logger);
  if (globals.quiet) {
    spdlog::set_level(spdlog::level::warn);
  } else if (globals.verbosity >= 2) {
    spdlog::set_level(spdlog::level::trace);
  } else if (globals.verbosity == 1) {
    spdlog::set_level(spdlog::level::debug);
  } else {
    spdlog::set_level(spdlog::level::info);
  }
}

void print_error(const Error& e) {
  std::cerr << "mblast: error: " << e.what() << "\n";
  if (!e.hint().empty()) std::cerr << "  fix: " << e.hint() << "\n";
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "mblast: makes GPU and vector kernels faster with LLM agents that learn from experience.\n"
      "It optimizes KernelBench-style PyTorch problems for CUDA, OpenCL or RISC-V vector cores\n"
      "and keeps what it learns in a SQLite knowledge base.",
      "mblast"};
  app.set_version_flag("--version", std::string("mblast ") + MBLAST_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  Globals globals;
  app.add_flag("-v,--verbose", globals.verbosity, "More log output (-vv for trace)");
  app.add_flag("-q,--quiet", globals.quiet, "Only warnings and errors on stderr");
  app.add_option("--kb", globals.kb_path,
                 "Knowledge base file (default: $MBLAST_KB, else "
                 "$XDG_DATA_HOME/mblast/kb.sqlite, else ~/.local/share/mblast/kb.sqlite)");

  Action action;
  register_optimize(app, globals, action);
  register_kb(app, globals, action);
  register_eval(app, globals, action);
  register_doctor(app, globals, action);
  register_llm(app, globals, action);
  register_report(app, globals, action);
  register_internal(app, globals, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mblast: usage error: " << e.what() << "\n"
              << "  fix: run `mblast --help` or `mblast COMMAND --help` for the options\n";
    return static_cast<int>(ExitCode::bad_input);
  }

  setup_logging(globals);
  try {
    return action ? action() : static_cast<int>(ExitCode::bad_input);
  } catch (const Error& e) {
    print_error(e);
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "mblast: internal error: " << e.what() << "\n"
              << "  please report this with the command you ran and `mblast -v` output\n";
    return static_cast<int>(ExitCode::job_failed);
  }
}

}  // namespace mblast::cli
