#pragma once
// The RVV backend's built-in techniques: the LMUL and unroll choices (KB transforms
// "lmul_choice" and "unroll_choice"). A candidate that uses MBLAST_LMUL and/or MBLAST_UNROLL
// (runtime/mblast_rvv.h) is run as written and then built with every value of the swept knobs
// (-DMBLAST_LMUL=1,2,4,8, -DMBLAST_UNROLL=1,2,4); each variant is checked against the bundles'
// expected outputs, and the cheapest correct one wins.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "native/bundle.hpp"
#include "native/native_backend.hpp"
#include "rvv_runner.hpp"

namespace mblast {

struct RvvVariant {
  int lmul = 0;    // 0: as written (not swept)
  int unroll = 0;  // 0: as written (not swept)
  bool correct = false;
  std::string error;  // error_kind: error, or the output mismatch
  double cost = 0;
  NativeRunResult run;
};

struct RvvSweepResult {
  std::vector<RvvVariant> variants;  // the candidate as written first, then in sweep order
  std::optional<std::size_t> best;   // index of the cheapest correct variant

  // {"variants": [{"lmul", "unroll", "correct", "cost", "error"}], "best": index or null}
  nlohmann::json table() const;
  // The candidate's source with the best variant's values defined at its top; throws
  // job_error when no variant is correct.
  std::string best_source(const std::string& source) const;
};

// The values a candidate's text asks to sweep: "MBLAST_LMUL", "MBLAST_UNROLL" or both.
std::vector<std::string> rvv_sweep_knobs(const std::string& source);

struct RvvSweepKnobs {
  bool lmul = true;
  bool unroll = true;
};

// Throws job_error when the candidate uses none of the requested knobs.
RvvSweepResult sweep_rvv_candidate(const std::filesystem::path& candidate_c,
                                   const BundleSet& bundles, const RvvOptions& options,
                                   RvvSweepKnobs knobs = {}, double atol = 1e-4,
                                   double rtol = 1e-4);

}  // namespace mblast
