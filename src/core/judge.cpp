#include "core/judge.hpp"

#include <spdlog/spdlog.h>

#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

EvalResult Judge::judge(const fs::path& candidate, bool compile_baseline) {
  if (auto stored = run_.stored_result(candidate)) {
    spdlog::debug("judge: {} was judged earlier in this run", candidate.filename().string());
    return *stored;
  }
  EvalResult result = backend_.judge(candidate, compile_baseline);
  if (result.stopped_by_time_limit) return result;
  ++evaluations_run_;
  // A step redone after a kill then writes the same attempt rows (their ids hash this time).
  result.judged_at = utc_now();
  run_.store_result(candidate, result);
  return result;
}

FailureReport failure_report(const EvalResult& result) {
  FailureReport report;
  report.outcome = result.outcome();
  report.error = result.error.value_or("");
  report.max_abs_err = result.max_abs_err;
  report.max_rel_err = result.max_rel_err;
  const auto& location = result.err_location;
  if (location.is_object()) {
    report.location = "output " + location.value("output", nlohmann::json(0)).dump() + " at " +
                      location.value("index", nlohmann::json::array()).dump() + ": candidate " +
                      location.value("cand", nlohmann::json()).dump() + ", reference " +
                      location.value("ref", nlohmann::json()).dump();
  }
  report.flags = result.flags;
  return report;
}

}  // namespace mblast
