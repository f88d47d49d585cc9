#pragma once
// The critic's edit language: validation against the schema and the KB, and application in one
// transaction. Shared by the LLM critic and the rule-based one.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/kb.hpp"

namespace mblast::agents {

constexpr std::size_t kMaxEdits = 8;
constexpr std::size_t kMaxClaimChars = 400;
constexpr std::size_t kMaxNoteChars = 400;
constexpr std::size_t kMaxNameChars = 80;
constexpr std::size_t kMaxDescriptionChars = 1200;

struct ValidatedEdits {
  std::vector<nlohmann::json> valid;  // normalized: ids resolved, optional fields filled
  std::vector<std::string> errors;    // "edits[2].claim_id: ...", or one for the whole answer
  bool document_ok = true;            // false: the answer's shape is wrong, no edit is usable
};

// Checks {"edits": [...]} field by field; ids must exist in the KB, or be added by an earlier
// add_technique of the same answer. Claim ids may be unique prefixes of 8 characters or more.
ValidatedEdits validate_edits(const nlohmann::json& answer, const KnowledgeBase& kb);

// Applies validated edits in one transaction. Evidence links to attempt_id unless it is empty;
// `backend` is recorded on predictions. Returns the edits with the id of each claim created.
std::vector<nlohmann::json> apply_edits(const std::vector<nlohmann::json>& edits, KnowledgeBase& kb,
                                        const std::string& attempt_id, const std::string& backend);

// "predicted speedup 1.3x for technique T in state S: note"
std::string prediction_text(const nlohmann::json& edit);

}  // namespace mblast::agents
