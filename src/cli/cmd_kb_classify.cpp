// `mblast kb classify`: the state the knowledge base's classifier gives a judged signature, from
// the cheap numbers alone, beside the state Nsight Compute's counters imply (issue 27, item 3).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <optional>

#include "cli/kb_classify.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/policy.hpp"
#include "mblast/speed_of_light.hpp"

namespace mblast::cli {

namespace {

namespace fs = std::filesystem;

struct Named {
  std::string name;
  ProfileSignature signature;
};

// The moved bytes over the minimal ones, and the ridge ratio over the minimal bytes (the
// signature's counts over the moved ones where they are known, speed_of_light.hpp).
void add_moved_bytes(nlohmann::json& row, const ProfileSignature& signature) {
  row["moved_over_min"] = nullptr;
  row["ridge_ratio_min"] = nullptr;
  const auto least = signature.metric("min_bytes");
  const auto moved = signature.metric("moved_bytes");
  if (!moved || !least || *least <= 0) return;
  row["moved_over_min"] = *moved / *least;
  if (const auto ridge = ridge_ratio_over_min_bytes(signature.to_json()))
    row["ridge_ratio_min"] = *ridge;
}

// A signature judged before the driver counted intensity over the moved bytes gets them as
// today's driver would count them.
ProfileSignature as_judged_now(const nlohmann::json& result) {
  nlohmann::json signature = result["signature"];
  if (const auto moved = counted_traffic(result, "signature")) count_moved_bytes(signature, *moved);
  return ProfileSignature::from_json(signature);
}

std::string problem_name(const nlohmann::json& result, const fs::path& file) {
  const auto problem = result.value("problem", nlohmann::json());
  if (!problem.is_string()) return file.filename().string();
  const fs::path path = problem.get<std::string>();
  return (path.parent_path().filename() / path.stem()).string();
}

// The signatures of one file: `mblast eval --json` output (one result or {"results": [...]}),
// or a bare signature.
std::vector<Named> signatures_in(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw input_error("cannot read " + file.string(), "check the path");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw input_error(file.string() + " is not JSON: " + e.what(),
                      "give the output of `mblast eval --profile --json`");
  }
  std::vector<nlohmann::json> results;
  if (doc.is_object() && doc.contains("results") && doc["results"].is_array()) {
    results.assign(doc["results"].begin(), doc["results"].end());
  } else {
    results.push_back(doc);
  }
  std::vector<Named> found;
  for (const auto& r : results) {
    if (!r.is_object()) continue;
    if (r.contains("signature") && r["signature"].is_object()) {
      found.push_back({problem_name(r, file), as_judged_now(r)});
    } else if (r.contains("total_ms")) {
      found.push_back({file.stem().string(), ProfileSignature::from_json(r)});
    }
  }
  if (found.empty()) {
    throw input_error(file.string() + " holds no profile signature",
                      "judge with `mblast eval PROBLEM --candidate FILE --profile ncu --json`");
  }
  return found;
}

nlohmann::json row_json(const Named& named, const StateCheck& check) {
  nlohmann::json row = {{"name", named.name},       {"state", check.cheap.state_id},
                        {"root", check.cheap_root}, {"evidence", check.cheap.explain()},
                        {"ncu_state", nullptr},     {"ncu_root", nullptr},
                        {"ncu_because", nullptr},   {"root_agrees", nullptr},
                        {"state_agrees", nullptr}};
  const auto ncu = named.signature.to_json().value("ncu", nlohmann::json::object());
  row["ncu_status"] = ncu.value("status", "not asked");
  add_moved_bytes(row, named.signature);
  if (ncu.value("reason", "") != "") row["ncu_reason"] = ncu["reason"];
  if (check.implied) {
    row["ncu_state"] = check.implied->state_id;
    row["ncu_root"] = check.implied->root;
    row["ncu_because"] = check.implied->because;
    row["root_agrees"] = check.root_agrees();
    row["state_agrees"] = check.state_agrees();
  }
  return row;
}

nlohmann::json summary_json(const nlohmann::json& rows) {
  int compared = 0, roots = 0, states = 0;
  for (const auto& row : rows) {
    if (row["root_agrees"].is_null()) continue;
    ++compared;
    roots += row["root_agrees"].get<bool>() ? 1 : 0;
    states += row["state_agrees"].get<bool>() ? 1 : 0;
  }
  auto rate = [&](int n) {
    return compared ? nlohmann::json(static_cast<double>(n) / compared) : nlohmann::json();
  };
  return {{"signatures", rows.size()}, {"with_ncu", compared},     {"root_agrees", roots},
          {"state_agrees", states},    {"root_rate", rate(roots)}, {"state_rate", rate(states)}};
}

std::string cell(const nlohmann::json& value) {
  if (value.is_null()) return "-";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "**no**";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void print_markdown(const nlohmann::json& rows, const nlohmann::json& summary) {
  std::cout << "| problem | state (cheap signature) | evidence | moved / min bytes (ridge ratio "
               "over min bytes) | state NCU implies | NCU numbers | root agrees |\n"
               "|---|---|---|---|---|---|---|\n";
  for (const auto& row : rows) {
    const std::string ncu =
        row["ncu_state"].is_null() ? "- (" + cell(row["ncu_status"]) + ")" : cell(row["ncu_state"]);
    const std::string moved =
        row["moved_over_min"].is_null()
            ? "-"
            : fmt::format("{:.3g}", row["moved_over_min"].get<double>()) +
                  (row["ridge_ratio_min"].is_null()
                       ? ""
                       : fmt::format(" ({:.3g})", row["ridge_ratio_min"].get<double>()));
    std::cout << "| " << cell(row["name"]) << " | " << cell(row["state"]) << " | "
              << cell(row["evidence"]) << " | " << moved << " | " << ncu << " | "
              << cell(row["ncu_state"].is_null() ? row.value("ncu_reason", nlohmann::json())
                                                 : row["ncu_because"])
              << " | " << cell(row["root_agrees"]) << " |\n";
  }
  if (summary["with_ncu"].get<int>() == 0) {
    std::cout << "\nno signature has Nsight Compute numbers: judge with `--profile ncu` on a GPU "
                 "where ncu can read the counters\n";
    return;
  }
  std::cout << fmt::format(
      "\nroot agrees on {} of {} ({:.0f}%), whole state on {} of {} ({:.0f}%)\n",
      summary["root_agrees"].get<int>(), summary["with_ncu"].get<int>(),
      100 * summary["root_rate"].get<double>(), summary["state_agrees"].get<int>(),
      summary["with_ncu"].get<int>(), 100 * summary["state_rate"].get<double>());
}

}  // namespace

void add_kb_classify(CLI::App* kb_command, Globals& globals, Action& action) {
  struct Options {
    std::vector<std::string> files;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* classify_command = kb_command->add_subcommand(
      "classify",
      "Classify judged profile signatures (the JSON of `mblast eval --profile --json`) with the "
      "knowledge base's states from the cheap numbers alone, beside the state Nsight Compute's "
      "counters imply where `--profile ncu` measured them (docs/STATES.md), and count where the "
      "two agree");
  classify_command->add_option("FILE", o->files, "eval JSON files (or bare signatures)")
      ->required()
      ->check(CLI::ExistingFile);
  classify_command->add_flag("--json", o->json, "Rows and the agreement summary as JSON");
  classify_command->callback([&action, &globals, o] {
    action = [&globals, o] {
      const KnowledgeBase kb(globals.kb());
      const auto states = kb.states();
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& file : o->files) {
        for (const auto& named : signatures_in(file)) {
          rows.push_back(row_json(named, check_state(states, named.signature)));
        }
      }
      const auto summary = summary_json(rows);
      if (o->json) {
        std::cout << nlohmann::json{{"rows", rows}, {"summary", summary}}.dump(2) << "\n";
      } else {
        print_markdown(rows, summary);
      }
      return 0;
    };
  });
}

}  // namespace mblast::cli
