#include "mblast/eval_result.hpp"

#include <array>
#include <utility>

#include "mblast/json_fields.hpp"

namespace mblast {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<ErrorKind, std::string_view>, 13> kKinds = {{
    {ErrorKind::compile, "compile"},
    {ErrorKind::candidate_load, "candidate_load"},
    {ErrorKind::candidate_runtime, "candidate_runtime"},
    {ErrorKind::timeout, "timeout"},
    {ErrorKind::crash, "crash"},
    {ErrorKind::shape, "shape"},
    {ErrorKind::dtype, "dtype"},
    {ErrorKind::nan_inf, "nan_inf"},
    {ErrorKind::mismatch, "mismatch"},
    {ErrorKind::cheat, "cheat"},
    {ErrorKind::task, "task"},
    {ErrorKind::skipped, "skipped"},
    {ErrorKind::none, ""},
}};

// The fields with a typed member; everything else goes to `extra`.
constexpr std::array<std::string_view, 23> kTyped = {"correct",
                                                     "max_abs_err",
                                                     "max_rel_err",
                                                     "ref_ms",
                                                     "cand_ms",
                                                     "speedup",
                                                     "ref_cost",
                                                     "cand_cost",
                                                     "compile_ms",
                                                     "speedup_vs_compile",
                                                     "flags",
                                                     "error",
                                                     "error_kind",
                                                     "speedup_baseline",
                                                     "baselines",
                                                     "tolerance",
                                                     "signature",
                                                     "err_location",
                                                     "device_name",
                                                     "torch_version",
                                                     "judged_at",
                                                     "stopped_by_time_limit",
                                                     "reference_signature"};

std::optional<double> number(const json& j, const char* key) {
  std::optional<double> out;
  read_lenient(j, key, out);
  return out;
}

std::string text(const json& j, const char* key) {
  std::string out;
  read_lenient(j, key, out);
  return out;
}

json value(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() ? json() : *it;
}

}  // namespace

std::string_view to_string(ErrorKind kind) {
  for (const auto& [k, name] : kKinds) {
    if (k == kind) return name;
  }
  return "other";
}

ErrorKind error_kind_from(std::string_view name) {
  for (const auto& [k, n] : kKinds) {
    if (n == name) return k;
  }
  return ErrorKind::other;
}

EvalResult EvalResult::from_json(const json& j) {
  EvalResult r;
  if (!j.is_object()) return r;
  r.correct = j.value("correct", false);
  r.max_abs_err = number(j, "max_abs_err");
  r.max_rel_err = number(j, "max_rel_err");
  r.ref_ms = number(j, "ref_ms");
  r.cand_ms = number(j, "cand_ms");
  r.speedup = number(j, "speedup");
  r.ref_cost = number(j, "ref_cost");
  r.cand_cost = number(j, "cand_cost");
  r.compile_ms = number(j, "compile_ms");
  r.speedup_vs_compile = number(j, "speedup_vs_compile");
  for (const auto& flag : value(j, "flags")) {
    if (flag.is_string()) r.flags.push_back(flag.get<std::string>());
  }
  if (const auto e = value(j, "error"); e.is_string()) r.error = e.get<std::string>();
  r.error_kind_name = text(j, "error_kind");
  r.error_kind = r.error_kind_name.empty() ? ErrorKind::none : error_kind_from(r.error_kind_name);
  r.speedup_baseline = text(j, "speedup_baseline");
  if (const auto rows = value(j, "baselines"); rows.is_array())
    r.baselines = BaselineFigure::list_from(rows);
  r.tolerance = Tolerance::from_json(value(j, "tolerance"));
  r.signature = ProfileSignature::from_json(value(j, "signature"));
  r.reference_signature = ProfileSignature::from_json(value(j, "reference_signature"));
  r.err_location = value(j, "err_location");
  r.device_name = text(j, "device_name");
  r.torch_version = text(j, "torch_version");
  r.judged_at = text(j, "judged_at");
  r.stopped_by_time_limit = j.value("stopped_by_time_limit", false);
  for (const auto& [key, v] : j.items()) {
    bool typed = false;
    for (const auto name : kTyped) typed = typed || key == name;
    if (!typed) r.extra[key] = v;
  }
  return r;
}

std::optional<Tolerance> Tolerance::from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  const auto atol = number(j, "atol");
  const auto rtol = number(j, "rtol");
  if (!atol || !rtol) return std::nullopt;
  Tolerance t;
  t.atol = *atol;
  t.rtol = *rtol;
  t.policy = text(j, "policy");
  const auto widened = j.find("widened_by_eager");
  t.widened_by_eager = widened != j.end() && widened->is_boolean() && widened->get<bool>();
  t.requested_atol = number(j, "requested_atol");
  t.requested_rtol = number(j, "requested_rtol");
  t.matched_ratio = number(j, "matched_ratio");
  t.error_cap = number(j, "error_cap");
  return t;
}

json Tolerance::to_json() const {
  json j = {{"atol", atol}, {"rtol", rtol}, {"widened_by_eager", widened_by_eager}};
  if (!policy.empty()) j["policy"] = policy;
  if (requested_atol) j["requested_atol"] = *requested_atol;
  if (requested_rtol) j["requested_rtol"] = *requested_rtol;
  if (matched_ratio) j["matched_ratio"] = *matched_ratio;
  if (error_cap) j["error_cap"] = *error_cap;
  return j;
}

std::vector<BaselineFigure> BaselineFigure::list_from(const json& array) {
  std::vector<BaselineFigure> figures;
  if (!array.is_array()) return figures;
  for (const auto& entry : array) {
    const auto measured = entry.is_object() ? number(entry, "value") : std::nullopt;
    if (!measured) continue;
    BaselineFigure figure;
    figure.value = *measured;
    figure.name = text(entry, "name");
    figure.unit = text(entry, "unit");
    figure.detail = text(entry, "detail");
    figure.speedup = number(entry, "speedup");
    for (const auto& [key, v] : entry.items()) {
      if (key != "name" && key != "value" && key != "unit" && key != "detail" && key != "speedup")
        figure.extra[key] = v;
    }
    figures.push_back(std::move(figure));
  }
  return figures;
}

json BaselineFigure::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j.update({{"name", name}, {"value", value}, {"unit", unit}, {"detail", detail}});
  if (speedup) j["speedup"] = *speedup;
  return j;
}

json EvalResult::to_json() const {
  json j = extra.is_object() ? extra : json::object();
  j["correct"] = correct;
  j["max_abs_err"] = optional_json(max_abs_err);
  j["max_rel_err"] = optional_json(max_rel_err);
  j["ref_ms"] = optional_json(ref_ms);
  j["cand_ms"] = optional_json(cand_ms);
  j["speedup"] = optional_json(speedup);
  j["flags"] = flags;
  j["error"] = error ? json(*error) : json();
  j["error_kind"] = error_kind == ErrorKind::none
                        ? json()
                        : json(error_kind == ErrorKind::other ? error_kind_name
                                                              : std::string(to_string(error_kind)));
  // The optional fields appear where they have something to say.
  if (ref_cost) j["ref_cost"] = *ref_cost;
  if (cand_cost) j["cand_cost"] = *cand_cost;
  if (compile_ms) j["compile_ms"] = *compile_ms;
  if (speedup_vs_compile) j["speedup_vs_compile"] = *speedup_vs_compile;
  if (!speedup_baseline.empty()) j["speedup_baseline"] = speedup_baseline;
  if (baselines) {
    json rows = json::array();
    for (const auto& b : *baselines) rows.push_back(b.to_json());
    j["baselines"] = rows;
  }
  if (tolerance) j["tolerance"] = tolerance->to_json();
  if (!signature.to_json().is_null()) j["signature"] = signature.to_json();
  if (!reference_signature.to_json().is_null())
    j["reference_signature"] = reference_signature.to_json();
  if (!err_location.is_null()) j["err_location"] = err_location;
  if (!device_name.empty()) j["device_name"] = device_name;
  if (!torch_version.empty()) j["torch_version"] = torch_version;
  if (!judged_at.empty()) j["judged_at"] = judged_at;
  if (stopped_by_time_limit) j["stopped_by_time_limit"] = true;
  return j;
}

EvalResult EvalResult::failure(ErrorKind kind, std::string error) {
  EvalResult r;
  r.error_kind = kind;
  r.error = std::move(error);
  return r;
}

Outcome EvalResult::outcome() const {
  if (correct) return Outcome::correct;
  switch (error_kind) {
    case ErrorKind::compile:
    case ErrorKind::candidate_load:
      return Outcome::compile_error;
    case ErrorKind::timeout:
      return Outcome::timeout;
    case ErrorKind::cheat:
      return Outcome::cheat;
    case ErrorKind::crash:
    case ErrorKind::candidate_runtime:
      return Outcome::runtime_error;
    case ErrorKind::skipped:
      return Outcome::skipped;
    default:
      return Outcome::incorrect;
  }
}

}  // namespace mblast
