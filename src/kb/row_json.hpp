#pragma once
// Rows as JSON objects (for hashing, query output and export) and back from statements.
#include <nlohmann/json.hpp>

#include "kb/sqlite.hpp"
#include "mblast/kb.hpp"

namespace mblast::kb {

nlohmann::json to_json(const AttemptRow& row);
nlohmann::json to_json(const ImplementationRow& row);

StateRow state_from(const sql::Stmt& stmt);          // columns: see reads.cpp kStateColumns
TechniqueRow technique_from(const sql::Stmt& stmt);  // columns: see reads.cpp kTechniqueColumns
AttemptRow attempt_from(const sql::Stmt& stmt);      // SELECT * FROM attempts
ImplementationRow implementation_from(const sql::Stmt& stmt);  // SELECT * FROM implementations
ClaimRow claim_from(const sql::Stmt& stmt);                    // SELECT * FROM claims
RunRow run_from(const sql::Stmt& stmt);                        // SELECT * FROM runs

}  // namespace mblast::kb
