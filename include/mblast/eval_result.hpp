#pragma once
// What judging one candidate found, as every backend returns it and the loop, the KB writes and
// the run directory read it: the result object of docs/ARCHITECTURE.md §3 with typed fields.
// Failures are data here (an error kind and its text), not exceptions. JSON only at the edges:
// to_json() is what `mblast eval --json` prints and the run directory stores, with every field a
// judge adds beyond these kept as it came (`extra`).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/outcome.hpp"
#include "mblast/profile_signature.hpp"

namespace mblast {

enum class ErrorKind {
  none,
  compile,            // the candidate did not build (compiler log in error)
  candidate_load,     // it did not import or construct
  candidate_runtime,  // its forward raised
  timeout,            // it ran past its time limit
  crash,              // its process died (a signal)
  shape,
  dtype,
  nan_inf,
  mismatch,  // wrong values
  cheat,     // correct values, but a reward hack was found (flags)
  task,      // the problem itself is unusable
  skipped,   // a built-in transform that had nothing to change
  other,     // a kind this build does not know; its name is kept
};

std::string_view to_string(ErrorKind kind);
ErrorKind error_kind_from(std::string_view name);

// The tolerance a candidate was judged with: |cand - ref| <= atol + rtol |ref| against the float64
// reference (docs/ARCHITECTURE.md §3).
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  std::string policy;                                    // "eager-widened" or "strict"
  bool widened_by_eager = false;                         // raised to eager's own error
  std::optional<double> requested_atol, requested_rtol;  // what was asked, where the judge says
  // A SOL-ExecBench workload's: the share of elements that must be within, and a cap on any
  // element's absolute error (none: every element within, no cap).
  std::optional<double> matched_ratio, error_cap;

  // nullopt for anything but an object with numeric atol and rtol.
  static std::optional<Tolerance> from_json(const nlohmann::json& object);
  nlohmann::json to_json() const;
};

// One fixed baseline a native backend measures (PyTorch on the CPU, a naive kernel, plain C), as
// the judge reports it beside a candidate.
struct BaselineFigure {
  std::string name;
  double value = 0;
  std::string unit;  // "ms" or "cost"
  std::string detail;
  std::optional<double> speedup;                    // the candidate over it, when correct
  nlohmann::json extra = nlohmann::json::object();  // what else the judge said of it

  // The entries of a judge's "baselines" array that name a numeric figure.
  static std::vector<BaselineFigure> list_from(const nlohmann::json& array);
  nlohmann::json to_json() const;
  // The figure alone: what the baseline measured, without the candidate's speedup over it.
  BaselineFigure figure() const { return {name, value, unit, detail, std::nullopt, {}}; }
};

struct EvalResult {
  bool correct = false;
  std::optional<double> max_abs_err, max_rel_err;
  std::optional<double> ref_ms, cand_ms, speedup;  // CUDA and OpenCL times; speedup = ref / cand
  std::optional<double> ref_cost, cand_cost;       // RVV's deterministic cost
  std::optional<double> compile_ms, speedup_vs_compile;
  std::vector<std::string> flags;
  std::optional<std::string> error;
  ErrorKind error_kind = ErrorKind::none;
  std::string error_kind_name;   // as the judge wrote it, for ErrorKind::other
  std::string speedup_baseline;  // what speedup is over: "" (eager) or a native baseline's name
  std::optional<std::vector<BaselineFigure>> baselines;  // native backends only
  std::optional<Tolerance> tolerance;
  ProfileSignature signature;            // the candidate's profile signature, if profiled
  ProfileSignature reference_signature;  // the reference's, where the judge profiled it too
  nlohmann::json err_location;           // where the worst mismatch is, or null
  std::string device_name, torch_version, judged_at;
  bool stopped_by_time_limit = false;               // the run's --time-limit ended it: no verdict
  nlohmann::json extra = nlohmann::json::object();  // every other field, as the judge wrote it

  static EvalResult from_json(const nlohmann::json& object);
  nlohmann::json to_json() const;

  // A failed result of this kind with this text (no worker ran, or the agent wrote nothing).
  static EvalResult failure(ErrorKind kind, std::string error);

  // What the result comes to: correct, or the kind of failure.
  Outcome outcome() const;
  // The primary time of the result: ref/cand ms, or the native cost.
  std::optional<double> baseline_value() const { return ref_ms ? ref_ms : ref_cost; }
};

}  // namespace mblast
