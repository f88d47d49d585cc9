#pragma once
// What a native backend (OpenCL, RVV) hands the judge after running one candidate on a problem's
// tensor bundles. The judge (src/core/native_eval.cpp) compares the outputs with the bundles'
// expected outputs and builds the same result JSON as `mblast eval` on CUDA.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/bundle.hpp"

namespace mblast {

struct NativeRunResult {
  // "" when the candidate built and ran on every bundle; else "compile" (the build failed:
  // error holds the compiler's log verbatim), "candidate_runtime" (it ran and reported an
  // error), "timeout" (killed at the timeout), "crash" (killed by a signal).
  std::string error_kind;
  std::string error;
  std::vector<std::vector<Tensor>> outputs;  // per bundle, the produced outputs in order
  // OpenCL: {"median_ms", "p10_ms", "p90_ms", "mean_ms", "runs"} from profiling events.
  // RVV: {"cost": N, "model": "...", "instructions": N, ...}: the deterministic cost.
  nlohmann::json timing = nlohmann::json::object();
  std::string device_name;
  double build_seconds = 0;
  double run_seconds = 0;
  nlohmann::json details = nlohmann::json::object();  // backend-specific extras for the report
};

}  // namespace mblast
