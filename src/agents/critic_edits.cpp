// Validating and applying the critic's KB edits.
#include "agents/critic_edits.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "kb/sqlite.hpp"

namespace mblast::agents {

namespace {

using nlohmann::json;

constexpr std::size_t kMinClaimPrefix = 8;
constexpr double kMaxPredictedSpeedup = 100;

// What the KB holds, plus the techniques added earlier in the same answer.
struct KbIndex {
  const KnowledgeBase& kb;
  std::set<std::string> states;
  std::set<std::string> techniques;
  std::set<std::string> backends;  // those the KB's catalogue has techniques for

  explicit KbIndex(const KnowledgeBase& knowledge) : kb(knowledge) {
    for (const auto& s : kb.states()) states.insert(s.id);
    for (const auto& t : kb.techniques()) {
      techniques.insert(t.id);
      backends.insert(t.backends.begin(), t.backends.end());
    }
  }

  std::string backend_list() const { return fmt::format("{}", fmt::join(backends, ", ")); }

  // The full id of the claim `id` names (exactly or as a unique prefix), or an error.
  std::string resolve_claim(std::string id, std::string& error) const {
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (id.size() < kMinClaimPrefix) {
      error = fmt::format("claim id '{}' is too short (give at least {} characters)", id,
                          kMinClaimPrefix);
      return {};
    }
    auto stmt = kb.db().prepare("SELECT id FROM claims WHERE id >= ?1 AND id < ?1 || 'g' LIMIT 2");
    stmt.bind(1, id);
    std::vector<std::string> found;
    while (stmt.step()) found.push_back(stmt.get_text(0));
    if (found.empty()) error = fmt::format("no claim with id '{}' in the KB", id);
    if (found.size() > 1) error = fmt::format("claim id '{}' is ambiguous", id);
    return found.size() == 1 ? found[0] : std::string();
  }
};

// Reads the fields of one edit, collecting errors and refusing fields the schema lacks.
class EditReader {
 public:
  EditReader(const json& edit, std::string prefix, std::vector<std::string>& errors)
      : edit_(edit), prefix_(std::move(prefix)), errors_(errors) {}

  void fail(const std::string& field, const std::string& message) {
    errors_.push_back(fmt::format("{}.{}: {}", prefix_, field, message));
    ok_ = false;
  }
  bool ok() const { return ok_; }

  // A string field; nullopt when absent or null (an error unless allowed).
  std::optional<std::string> text(const std::string& field, std::size_t max_chars,
                                  bool required = true, bool allow_empty = false) {
    known_.insert(field);
    if (!edit_.contains(field) || edit_[field].is_null()) {
      if (required) fail(field, edit_.contains(field) ? "must not be null" : "is missing");
      return std::nullopt;
    }
    if (!edit_[field].is_string()) {
      fail(field, fmt::format("must be a string, not {}", edit_[field].type_name()));
      return std::nullopt;
    }
    std::string value = edit_[field].get<std::string>();
    if (!allow_empty && value.find_first_not_of(" \t\n") == std::string::npos) {
      fail(field, "must not be empty");
      return std::nullopt;
    }
    if (value.size() > max_chars) {
      fail(field, fmt::format("is {} characters long; at most {}", value.size(), max_chars));
      return std::nullopt;
    }
    return value;
  }

  std::optional<std::vector<std::string>> strings(const std::string& field) {
    known_.insert(field);
    if (!edit_.contains(field) || !edit_[field].is_array()) {
      fail(field, edit_.contains(field) ? "must be an array of strings" : "is missing");
      return std::nullopt;
    }
    std::vector<std::string> values;
    for (const auto& item : edit_[field]) {
      if (!item.is_string()) {
        fail(field, "must be an array of strings");
        return std::nullopt;
      }
      values.push_back(item.get<std::string>());
    }
    return values;
  }

  std::optional<double> number(const std::string& field) {
    known_.insert(field);
    if (!edit_.contains(field) || !edit_[field].is_number()) {
      fail(field, edit_.contains(field) ? "must be a number" : "is missing");
      return std::nullopt;
    }
    return edit_[field].get<double>();
  }

  void check_unknown_fields() {
    for (const auto& [key, value] : edit_.items()) {
      if (key != "op" && !known_.count(key)) fail(key, "is not a field of this op");
    }
  }

 private:
  const json& edit_;
  std::string prefix_;
  std::vector<std::string>& errors_;
  std::set<std::string> known_;
  bool ok_ = true;
};

json nullable(const std::optional<std::string>& value) { return value ? json(*value) : json(); }

void check_state(EditReader& r, const KbIndex& index, const std::string& field,
                 const std::optional<std::string>& id) {
  if (id && !index.states.count(*id)) r.fail(field, fmt::format("no state '{}' in the KB", *id));
}

void check_technique(EditReader& r, const KbIndex& index, const std::string& field,
                     const std::optional<std::string>& id) {
  if (id && !index.techniques.count(*id)) {
    r.fail(field, fmt::format("no technique '{}' in the KB", *id));
  }
}

json read_add_claim(EditReader& r, const KbIndex& index) {
  auto text = r.text("text", kMaxClaimChars);
  auto state = r.text("state_id", 200, false);
  auto technique = r.text("technique_id", 200, false);
  auto backend = r.text("backend", 20, false);
  auto evidence = r.text("evidence", 20);
  auto note = r.text("note", kMaxNoteChars, false, true);
  check_state(r, index, "state_id", state);
  check_technique(r, index, "technique_id", technique);
  if (backend && !index.backends.count(*backend)) {
    r.fail("backend",
           fmt::format("must be one of the KB's backends ({}) or null", index.backend_list()));
  }
  if (evidence && *evidence != "support" && *evidence != "refute") {
    r.fail("evidence", "must be \"support\" or \"refute\"");
  }
  return {{"op", "add_claim"},
          {"text", text.value_or("")},
          {"state_id", nullable(state)},
          {"technique_id", nullable(technique)},
          {"backend", nullable(backend)},
          {"evidence", evidence.value_or("")},
          {"note", note.value_or("")}};
}

json read_claim_op(const std::string& op, EditReader& r, const KbIndex& index, bool with_note) {
  auto id = r.text("claim_id", 100);
  auto note = with_note ? r.text("note", kMaxNoteChars, false, true) : std::nullopt;
  std::string full;
  if (id) {
    std::string error;
    full = index.resolve_claim(*id, error);
    if (!error.empty()) r.fail("claim_id", error);
  }
  json edit = {{"op", op}, {"claim_id", full}};
  if (with_note) edit["note"] = note.value_or("");
  return edit;
}

json read_add_technique(EditReader& r, KbIndex& index) {
  static const std::regex id_pattern(R"(^[a-z0-9]+/[a-z0-9]+(-[a-z0-9]+)*$)");
  auto id = r.text("id", 64);
  auto name = r.text("name", kMaxNameChars);
  auto description = r.text("description", kMaxDescriptionChars);
  auto backends = r.strings("backends");
  auto states = r.strings("states");
  const std::string id_prefix = id ? id->substr(0, id->find('/')) : "";
  if (id && (!std::regex_match(*id, id_pattern) ||
             (id_prefix != "common" && !index.backends.count(id_prefix)))) {
    r.fail("id", fmt::format("'{}' is not backend/slug (a backend of the KB or common, then lower "
                             "case, digits and dashes)",
                             *id));
  } else if (id && index.techniques.count(*id)) {
    r.fail("id", fmt::format("technique '{}' already exists", *id));
  }
  if (backends) {
    if (backends->empty()) r.fail("backends", "must name at least one backend");
    for (const auto& b : *backends) {
      if (!index.backends.count(b)) r.fail("backends", fmt::format("unknown backend '{}'", b));
    }
    std::string prefix = id ? id->substr(0, id->find('/')) : "";
    if (id && prefix != "common" &&
        std::find(backends->begin(), backends->end(), prefix) == backends->end()) {
      r.fail("backends", fmt::format("must include '{}', the backend of the id", prefix));
    }
  }
  if (states) {
    if (states->empty()) r.fail("states", "must name at least one state");
    for (const auto& s : *states) check_state(r, index, "states", s);
  }
  if (r.ok() && id) index.techniques.insert(*id);
  return {{"op", "add_technique"},
          {"id", id.value_or("")},
          {"name", name.value_or("")},
          {"description", description.value_or("")},
          {"backends", backends.value_or(std::vector<std::string>{})},
          {"states", states.value_or(std::vector<std::string>{})}};
}

json read_deprecate_technique(EditReader& r, const KbIndex& index) {
  auto id = r.text("id", 200);
  check_technique(r, index, "id", id);
  return {{"op", "deprecate_technique"}, {"id", id.value_or("")}};
}

json read_predict(EditReader& r, const KbIndex& index) {
  auto state = r.text("state_id", 200);
  auto technique = r.text("technique_id", 200);
  auto speedup = r.number("expected_speedup");
  auto note = r.text("note", kMaxNoteChars, false, true);
  check_state(r, index, "state_id", state);
  check_technique(r, index, "technique_id", technique);
  if (speedup && !(std::isfinite(*speedup) && *speedup > 0 && *speedup <= kMaxPredictedSpeedup)) {
    r.fail("expected_speedup", fmt::format("must be above 0 and at most {}", kMaxPredictedSpeedup));
  }
  return {{"op", "predict"},
          {"state_id", state.value_or("")},
          {"technique_id", technique.value_or("")},
          {"expected_speedup", speedup.value_or(0.0)},
          {"note", note.value_or("")}};
}

}  // namespace

ValidatedEdits validate_edits(const json& answer, const KnowledgeBase& kb) {
  ValidatedEdits result;
  auto document_error = [&](const std::string& message) {
    result.errors.push_back(message);
    result.document_ok = false;
    return result;
  };
  if (!answer.is_object()) return document_error("the answer must be a JSON object");
  for (const auto& [key, value] : answer.items()) {
    if (key != "edits") return document_error(fmt::format("unknown top-level field '{}'", key));
  }
  if (!answer.contains("edits") || !answer["edits"].is_array()) {
    return document_error("the answer must have an \"edits\" array");
  }
  const auto& edits = answer["edits"];
  if (edits.size() > kMaxEdits) {
    return document_error(
        fmt::format("the answer has {} edits; at most {} are allowed", edits.size(), kMaxEdits));
  }
  KbIndex index(kb);
  for (std::size_t i = 0; i < edits.size(); ++i) {
    const std::string prefix = fmt::format("edits[{}]", i);
    const json& edit = edits[i];
    if (!edit.is_object() || !edit.contains("op") || !edit["op"].is_string()) {
      result.errors.push_back(prefix + ": must be an object with a string \"op\"");
      continue;
    }
    const std::string op = edit["op"].get<std::string>();
    EditReader reader(edit, prefix, result.errors);
    json normalized;
    if (op == "add_claim") {
      normalized = read_add_claim(reader, index);
    } else if (op == "support" || op == "refute") {
      normalized = read_claim_op(op, reader, index, true);
    } else if (op == "deprecate_claim") {
      normalized = read_claim_op(op, reader, index, false);
    } else if (op == "add_technique") {
      normalized = read_add_technique(reader, index);
    } else if (op == "deprecate_technique") {
      normalized = read_deprecate_technique(reader, index);
    } else if (op == "predict") {
      normalized = read_predict(reader, index);
    } else {
      result.errors.push_back(fmt::format("{}.op: unknown op '{}'", prefix, op));
      continue;
    }
    reader.check_unknown_fields();
    if (reader.ok()) result.valid.push_back(std::move(normalized));
  }
  return result;
}

std::string prediction_text(const json& edit) {
  std::string text =
      fmt::format("predicted speedup {:.3g}x for technique {} in state {}",
                  edit["expected_speedup"].get<double>(), edit["technique_id"].get<std::string>(),
                  edit["state_id"].get<std::string>());
  const std::string note = edit.value("note", std::string());
  return note.empty() ? text : text + ": " + note;
}

std::vector<json> apply_edits(const std::vector<json>& edits, KnowledgeBase& kb,
                              const std::string& attempt_id, const std::string& backend) {
  auto optional_text = [](const json& value) {
    return value.is_string() ? std::optional<std::string>(value.get<std::string>()) : std::nullopt;
  };
  const std::optional<std::string> attempt =
      attempt_id.empty() ? std::nullopt : std::optional<std::string>(attempt_id);
  std::vector<json> applied;
  kb.transaction([&] {
    applied.clear();
    for (json edit : edits) {
      const std::string op = edit["op"].get<std::string>();
      if (op == "add_claim" || op == "predict") {
        ClaimRow row;
        row.text = op == "predict" ? prediction_text(edit) : edit["text"].get<std::string>();
        row.state_id = optional_text(edit["state_id"]);
        row.technique_id = optional_text(edit["technique_id"]);
        row.backend =
            op == "predict" ? std::optional<std::string>(backend) : optional_text(edit["backend"]);
        row.origin = "critic";
        const std::string claim_id = kb.add_claim(row);
        edit["claim_id"] = claim_id;
        if (op == "add_claim") {
          kb.add_evidence(claim_id, attempt, edit["evidence"].get<std::string>(),
                          edit["note"].get<std::string>());
        }
      } else if (op == "support" || op == "refute") {
        kb.add_evidence(edit["claim_id"].get<std::string>(), attempt, op,
                        edit["note"].get<std::string>());
      } else if (op == "deprecate_claim") {
        kb.deprecate_claim(edit["claim_id"].get<std::string>());
      } else if (op == "add_technique") {
        TechniqueRow row;
        row.id = edit["id"].get<std::string>();
        row.name = edit["name"].get<std::string>();
        row.description = edit["description"].get<std::string>();
        row.backends = edit["backends"].get<std::vector<std::string>>();
        row.states = edit["states"].get<std::vector<std::string>>();
        row.implementer = "llm";
        row.origin = "critic";
        kb.add_technique(row);
      } else if (op == "deprecate_technique") {
        kb.deprecate_technique(edit["id"].get<std::string>());
      }
      applied.push_back(std::move(edit));
    }
  });
  return applied;
}

}  // namespace mblast::agents
