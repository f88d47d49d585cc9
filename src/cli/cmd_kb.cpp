// `mblast kb ...`: create, inspect, export, import and merge knowledge bases.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <unistd.h>

#include "cli/app.hpp"
#include "cli/kb_classify.hpp"
#include "cli/table.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"

namespace mblast::cli {

namespace {

// Commands that only read open a KB the user may not write (shared, archived, on a read-only
// mount) read-only, rather than failing on the upgrade and seed checks that write.
KnowledgeBase open_for_reading(const std::filesystem::path& path) {
  if (std::filesystem::is_regular_file(path) && ::access(path.c_str(), W_OK) != 0) {
    return KnowledgeBase(
        path, KnowledgeBase::Options{.read_only = true, .target_version = 0, .seed = false});
  }
  return KnowledgeBase(path);
}

const std::map<std::string, std::vector<Column>>& query_columns() {
  static const std::map<std::string, std::vector<Column>> columns = {
      {"states",
       {{"id", "ID", 40},
        {"parent_id", "PARENT", 20},
        {"name", "NAME", 34},
        {"description", "DESCRIPTION", 60}}},
      {"techniques",
       {{"id", "ID", 44},
        {"implementer", "BY", 8},
        {"backends", "BACKENDS", 20},
        {"name", "NAME", 40},
        {"description", "DESCRIPTION", 50}}},
      {"claims",
       {{"id", "ID", 12},
        {"support", "+", 5},
        {"refute", "-", 5},
        {"state_id", "STATE", 30},
        {"technique_id", "TECHNIQUE", 34},
        {"text", "CLAIM", 70}}},
      {"attempts",
       {{"id", "ID", 12},
        {"created_at", "WHEN", 24},
        {"task", "TASK", 30},
        {"state_id", "STATE", 28},
        {"technique_id", "TECHNIQUE", 34},
        {"outcome", "OUTCOME", 14},
        {"speedup", "SPEEDUP", 8},
        {"reward", "REWARD", 8}}},
      {"implementations",
       {{"id", "ID", 12},
        {"task", "TASK", 36},
        {"backend", "BACKEND", 8},
        {"hardware", "HARDWARE", 24},
        {"speedup", "SPEEDUP", 8},
        {"time_ms", "MS", 10},
        {"technique_id", "TECHNIQUE", 34}}},
      {"runs",
       {{"id", "ID", 12},
        {"task", "TASK", 36},
        {"backend", "BACKEND", 8},
        {"hardware", "HARDWARE", 24},
        {"status", "STATUS", 10},
        {"best_speedup", "BEST", 8},
        {"cost_usd", "USD", 8},
        {"started_at", "STARTED", 24}}},
      {"rewards",
       {{"state_id", "STATE", 32},
        {"technique_id", "TECHNIQUE", 38},
        {"backend", "BACKEND", 8},
        {"hardware", "HARDWARE", 24},
        {"n", "N", 6},
        {"mean_reward", "MEAN", 8},
        {"best_reward", "BEST", 8}}},
      {"regions",
       {{"region", "REGION", 44},
        {"state_id", "STATE", 24},
        {"technique_id", "TECHNIQUE", 38},
        {"hardware", "HARDWARE", 20},
        {"n", "N", 4},
        {"mean_reward", "MEAN", 8},
        {"best_reward", "BEST", 8}}},
  };
  return columns;
}

void print_json(const nlohmann::json& value) { std::cout << value.dump(2) << "\n"; }

void add_json_flag(CLI::App* command, bool& json) {
  command->add_flag("--json", json, "Print JSON for scripts instead of a table");
}

// Parsed options of the kb subcommands, shared by their callbacks.
struct KbOptions {
  KbQuery query;
  bool query_json = false;
  std::string show_id;
  bool show_json = false;
  bool stats_json = false;
  std::string export_out;
  std::string import_in;
  bool import_json = false;
  std::vector<std::string> merge_inputs;
  std::string merge_out;
  bool merge_json = false;
};

void add_kb_init(CLI::App* kb_command, Globals& globals, Action& action,
                 const std::shared_ptr<KbOptions>& o) {
  auto* init =
      kb_command->add_subcommand("init", "Create the knowledge base (or upgrade it in place)");
  init->callback([&action, &globals, o] {
    action = [&globals, o] {
      KnowledgeBase kb(globals.kb());
      auto stats = kb.stats();
      std::cout << "knowledge base " << kb.path().string() << ": schema version "
                << stats.schema_version;
      for (const auto& [table, rows] : stats.rows_per_table) {
        if (table == "states" || table == "techniques") std::cout << ", " << rows << " " << table;
      }
      std::cout << "\n";
      return 0;
    };
  });
}

void add_kb_query(CLI::App* kb_command, Globals& globals, Action& action,
                  const std::shared_ptr<KbOptions>& o) {
  auto* q =
      kb_command->add_subcommand("query", "List rows of one kind, filtered; newest or best first");
  q->add_option("--kind", o->query.kind,
                "What to list: states, techniques, claims, attempts, implementations, runs, "
                "rewards, regions (reward statistics per region signature of --regions runs; "
                "default: techniques)")
      ->check(CLI::IsMember({"states", "techniques", "claims", "attempts", "implementations",
                             "runs", "rewards", "regions"}));
  q->add_option("--backend", o->query.backend, "Only this backend: cuda, opencl or rvv");
  q->add_option("--state", o->query.state,
                "Only this state and the states below it, e.g. memory-bound");
  q->add_option("--technique", o->query.technique,
                "Only this technique id (for techniques: ids containing this text)");
  q->add_option("--task", o->query.task, "Only this task (problem name)");
  q->add_option("--hardware", o->query.hardware, "Only this hardware, e.g. 'NVIDIA H200'");
  q->add_option("--region", o->query.region,
                "regions and attempts: only region signatures containing this text, e.g. "
                "'conv2d>batchnorm2d'");
  q->add_option("--limit", o->query.limit, "At most this many rows (default 50)")
      ->check(positive_number());
  add_json_flag(q, o->query_json);
  q->callback([&action, &globals, o] {
    action = [&globals, o] {
      KnowledgeBase kb = open_for_reading(globals.kb());
      auto rows = kb.query(o->query);
      if (o->query_json) {
        print_json(rows);
      } else if (rows.empty()) {
        std::cout << "no " << o->query.kind << " match these filters\n";
      } else {
        std::cout << format_table(rows, query_columns().at(o->query.kind));
      }
      return 0;
    };
  });
}

void add_kb_show(CLI::App* kb_command, Globals& globals, Action& action,
                 const std::shared_ptr<KbOptions>& o) {
  auto* show = kb_command->add_subcommand(
      "show", "Show one row in full, with related rows (ID: a slug or a unique hash prefix)");
  show->add_option("ID", o->show_id, "State or technique slug, or a hash prefix")->required();
  add_json_flag(show, o->show_json);
  show->callback([&action, &globals, o] {
    action = [&globals, o] {
      KnowledgeBase kb = open_for_reading(globals.kb());
      auto found = kb.show(o->show_id);
      if (!found) {
        throw input_error("nothing in " + kb.path().string() + " has id '" + o->show_id + "'",
                          "list ids with `mblast kb query --kind KIND`");
      }
      if (o->show_json) {
        print_json(*found);
        return 0;
      }
      std::cout << (*found)["kind"].get<std::string>() << "\n";
      for (const auto& [key, value] : (*found)["row"].items()) {
        std::cout << "  " << key << ": " << cell_text(value) << "\n";
      }
      for (const auto& [key, value] : found->items()) {
        if (key == "kind" || key == "row" || !value.is_array() || value.empty()) continue;
        std::cout << key << " (" << value.size() << ")\n";
        std::vector<Column> columns;
        for (const auto& [field, unused] : value[0].items()) columns.push_back({field, field, 50});
        std::cout << format_table(value, columns);
      }
      return 0;
    };
  });
}

void add_kb_stats(CLI::App* kb_command, Globals& globals, Action& action,
                  const std::shared_ptr<KbOptions>& o) {
  auto* stats_command = kb_command->add_subcommand("stats", "Row counts per table and file size");
  add_json_flag(stats_command, o->stats_json);
  stats_command->callback([&action, &globals, o] {
    action = [&globals, o] {
      KnowledgeBase kb = open_for_reading(globals.kb());
      auto stats = kb.stats();
      if (o->stats_json) {
        nlohmann::json rows = nlohmann::json::object();
        for (const auto& [table, count] : stats.rows_per_table) rows[table] = count;
        print_json({{"path", kb.path().string()},
                    {"schema_version", stats.schema_version},
                    {"file_bytes", stats.file_bytes},
                    {"rows", rows}});
        return 0;
      }
      std::cout << "knowledge base  " << kb.path().string() << "\n"
                << "schema version  " << stats.schema_version << "\n"
                << "file size       " << stats.file_bytes << " bytes\n";
      for (const auto& [table, count] : stats.rows_per_table) {
        std::cout << "  " << table << std::string(18 - std::min<std::size_t>(table.size(), 17), ' ')
                  << count << "\n";
      }
      return 0;
    };
  });
}

void add_kb_export(CLI::App* kb_command, Globals& globals, Action& action,
                   const std::shared_ptr<KbOptions>& o) {
  auto* exp = kb_command->add_subcommand(
      "export", "Write the whole knowledge base as JSON Lines (stable order), to stdout or -o");
  exp->add_option("-o,--output", o->export_out, "Output file (default: stdout)");
  exp->callback([&action, &globals, o] {
    action = [&globals, o] {
      KnowledgeBase kb = open_for_reading(globals.kb());
      if (o->export_out.empty() || o->export_out == "-") {
        kb.export_jsonl(std::cout);
        return 0;
      }
      // Written beside the output and renamed at the end: a failed export leaves no torn file.
      const std::string partial = o->export_out + ".partial";
      {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        if (!out) {
          throw input_error("cannot write " + o->export_out,
                            "check the folder exists and is writable");
        }
        try {
          kb.export_jsonl(out);
        } catch (...) {
          std::filesystem::remove(partial);
          throw;
        }
      }
      std::error_code ec;
      std::filesystem::rename(partial, o->export_out, ec);
      if (ec) {
        std::filesystem::remove(partial);
        throw input_error("cannot write " + o->export_out + ": " + ec.message(),
                          "give -o a file path in a writable folder");
      }
      return 0;
    };
  });
}

void add_kb_import(CLI::App* kb_command, Globals& globals, Action& action,
                   const std::shared_ptr<KbOptions>& o) {
  auto* imp = kb_command->add_subcommand(
      "import", "Add the rows of a `kb export` file; rows already present are skipped");
  imp->add_option("FILE", o->import_in, "JSON Lines file, or - for stdin")->required();
  add_json_flag(imp, o->import_json);
  imp->callback([&action, &globals, o] {
    action = [&globals, o] {
      KnowledgeBase kb(globals.kb());
      ImportResult result;
      if (o->import_in == "-") {
        result = kb.import_jsonl(std::cin);
      } else {
        std::ifstream in(o->import_in, std::ios::binary);
        if (!in) throw input_error("cannot read " + o->import_in, "check the path");
        result = kb.import_jsonl(in);
      }
      if (o->import_json) {
        print_json({{"read", result.read}, {"inserted", result.inserted}});
      } else {
        std::cout << "imported " << result.inserted << " new rows of " << result.read << " read\n";
      }
      return 0;
    };
  });
}

void add_kb_merge(CLI::App* kb_command, Action& action, const std::shared_ptr<KbOptions>& o) {
  auto* merge = kb_command->add_subcommand(
      "merge",
      "Combine knowledge bases into OUT without duplicates (rows are identified by content); all "
      "or nothing: OUT is replaced only once every input went in");
  merge->add_option("INPUTS", o->merge_inputs, "Knowledge base files to fold in")
      ->required()
      ->check(CLI::ExistingFile);
  merge
      ->add_option("-o,--output", o->merge_out,
                   "The knowledge base to merge into (created if missing; may be one of the "
                   "inputs' copies from an earlier merge)")
      ->required();
  add_json_flag(merge, o->merge_json);
  merge->callback([&action, o] {
    action = [o] {
      const std::vector<std::filesystem::path> inputs(o->merge_inputs.begin(),
                                                      o->merge_inputs.end());
      const auto results = merge_knowledge_bases(o->merge_out, inputs);
      nlohmann::json report = nlohmann::json::array();
      for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& input = o->merge_inputs[i];
        const auto& result = results[i];
        report.push_back({{"input", input}, {"read", result.read}, {"inserted", result.inserted}});
        if (!o->merge_json) {
          std::cout << input << ": " << result.inserted << " new rows of " << result.read << "\n";
        }
      }
      if (o->merge_json) print_json({{"output", o->merge_out}, {"inputs", report}});
      return 0;
    };
  });
}

}  // namespace

void register_kb(CLI::App& app, Globals& globals, Action& action) {
  auto o = std::make_shared<KbOptions>();
  auto* kb_command = app.add_subcommand(
      "kb", "Inspect and manage the knowledge base (states, techniques, claims, attempts, ...)");
  kb_command->require_subcommand(1);
  add_kb_init(kb_command, globals, action, o);
  add_kb_query(kb_command, globals, action, o);
  add_kb_show(kb_command, globals, action, o);
  add_kb_stats(kb_command, globals, action, o);
  add_kb_export(kb_command, globals, action, o);
  add_kb_import(kb_command, globals, action, o);
  add_kb_merge(kb_command, action, o);
  add_kb_classify(kb_command, globals, action);
}

}  // namespace mblast::cli
