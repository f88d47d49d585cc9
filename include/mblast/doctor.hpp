#pragma once
// `mblast doctor`: checks the tools and settings each backend needs and says how to fix what is
// missing. Checks never throw; a failed probe is a check that is not ok.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/doctor_check.hpp"

namespace mblast {

struct DoctorOptions {
  std::filesystem::path kb_path;        // empty: the default KB location (docs/ARCHITECTURE.md §8)
  bool check_llm_connectivity = false;  // reserved, not used yet
  std::vector<std::string> only;        // names of the checks to run; empty: all of them
};

// Names of every check, in the order run_doctor reports them.
const std::vector<std::string>& doctor_check_names();

std::vector<DoctorCheck> run_doctor(const DoctorOptions& options);

// {"checks": [{"name", "ok", "detail", "fix", "required"}], "ok": every required check is ok}
nlohmann::json doctor_to_json(const std::vector<DoctorCheck>& checks);

// One aligned line per check: "ok       nvcc            CUDA 13.0 (/usr/local/cuda/bin/nvcc)".
std::string doctor_to_text(const std::vector<DoctorCheck>& checks);

}  // namespace mblast
