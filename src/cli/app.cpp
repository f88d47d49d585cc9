#include "cli/app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <vector>

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

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The subcommands a user may type: named and listed in help (hidden ones have an empty group).
std::vector<const CLI::App*> visible_subcommands(const CLI::App& level) {
  return level.get_subcommands(
      [](const CLI::App* s) { return !s->get_name().empty() && s->get_group() != ""; });
}

// "a, b, c"
std::string joined_names(const std::vector<const CLI::App*>& subcommands) {
  std::string names;
  for (const CLI::App* s : subcommands) names += (names.empty() ? "" : ", ") + s->get_name();
  return names;
}

CLI::Validator number_validator(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& input) -> std::string {
        double value = 0;
        std::size_t used = 0;
        try {
          value = std::stod(input, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != input.size()) return "expects a number, got '" + input + "'";
        if (zero_allowed ? value < 0 : value <= 0) {
          return std::string("must be ") + (zero_allowed ? "0 or more" : "greater than 0") +
                 ", got " + input;
        }
        return {};
      },
      zero_allowed ? "NUMBER >= 0" : "NUMBER > 0");
}

}  // namespace

CLI::Validator positive_number() { return number_validator(false); }
CLI::Validator non_negative_number() { return number_validator(true); }

std::string unknown_command_hint(const CLI::App& app, int argc, char** argv,
                                 bool missing_subcommand) {
  const CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty()) continue;
    if (word[0] == '-') {
      // An option of this level that takes a value (--kb FILE) hides the next word.
      const CLI::Option* option = nullptr;
      for (const CLI::App* a = level; a && !option; a = a->get_parent()) {
        option = a->get_option_no_throw(word.substr(0, word.find('=')));
      }
      if (option && word.find('=') == std::string::npos && option->get_expected_min() > 0) ++i;
      continue;
    }
    const auto subcommands = visible_subcommands(*level);
    if (subcommands.empty()) return {};
    const CLI::App* exact = nullptr;
    const CLI::App* nearest = nullptr;
    std::size_t best = 3;  // two edits at most
    for (const CLI::App* s : subcommands) {
      if (s->get_name() == word) exact = s;
      const std::size_t d = edit_distance(word, s->get_name());
      if (d < best) best = d, nearest = s;
    }
    if (exact) {
      level = exact;
      continue;
    }
    const std::string prefix = level == &app ? "" : level->get_name() + " ";
    if (nearest) {
      return "no command '" + prefix + word + "' (did you mean " + prefix + nearest->get_name() +
             "?)";
    }
    return "no command '" + prefix + word + "'; the commands are: " + joined_names(subcommands);
  }
  const auto subcommands = visible_subcommands(*level);
  if (!missing_subcommand || subcommands.empty()) return {};
  return std::string("`mblast") + (level == &app ? "" : " " + level->get_name()) +
         "` needs a command: " + joined_names(subcommands);
}

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
  register_regions(app, globals, action);
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
    const std::string typo =
        unknown_command_hint(app, argc, argv, std::string(e.what()) == "A subcommand is required");
    std::cerr << "mblast: usage error: " << (typo.empty() ? e.what() : typo) << "\n"
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
