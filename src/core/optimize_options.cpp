// OptimizeOptions to and from a run's config.json, so that --resume continues with them.
#include "mblast/error.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/optimize.hpp"

namespace mblast {

nlohmann::json options_to_json(const OptimizeOptions& o) {
  nlohmann::json j = judge_options_to_json(o.judge);
  j.update(
      {{"problem", o.problem.string()},
       {"llm", o.llm},
       {"llm_config", o.llm_config ? nlohmann::json(o.llm_config->string()) : nlohmann::json()},
       {"llm_record", o.llm_record},
       {"iterations", o.iterations},
       {"steps", o.steps},
       {"fix_attempts", o.fix_attempts},
       {"techniques", o.techniques},
       {"max_evaluations", optional_json(o.max_evaluations)},
       {"time_limit_minutes", optional_json(o.time_limit_minutes)},
       {"max_tokens", optional_json(o.max_tokens)},
       {"max_cost_usd", optional_json(o.max_cost_usd)},
       {"allow_bf16", o.allow_bf16},
       {"regions", o.regions},
       {"graph_first", o.graph_first},
       {"prebuild", o.prebuild},
       {"other_hardware_weight", o.other_hardware_weight},
       {"kb", o.kb.string()},
       {"out", o.out.string()},
       {"prestart", o.prestart}});
  return j;
}

namespace {

// Runs recorded before the judge's options had one JSON form, and before the backends declared
// their own options, named some of them otherwise.
void read_legacy_judge_options(const nlohmann::json& j, JudgeOptions& judge) {
  if (!j.contains("seeds")) read_field(j, "verify_seeds", judge.seeds);
  if (!j.contains("timeout_s")) {
    std::int64_t timeout = judge.timeout.count();
    read_field(j, "eval_timeout_s", timeout);
    judge.timeout = std::chrono::seconds(timeout);
  }
  if (!j.contains("tolerance_policy") && j.contains("strict_tolerance") &&
      j["strict_tolerance"].is_boolean()) {
    judge.tolerance_policy = j["strict_tolerance"].get<bool>() ? "strict" : "eager-widened";
  }
  for (const auto& [legacy, key] : {std::pair<const char*, const char*>{"rvv_vlen", "vlen"},
                                    {"remote", "remote"},
                                    {"remote_mblast", "remote_mblast"},
                                    {"remote_prefix", "remote_prefix"}}) {
    const auto it = j.find(legacy);
    if (it == j.end() || it->is_null()) continue;
    judge.target[key] = it->is_string() ? it->get<std::string>() : it->dump();
  }
}

}  // namespace

OptimizeOptions options_from_json(const nlohmann::json& j) {
  OptimizeOptions o;
  try {
    std::string text;
    read_field(j, "problem", text);
    o.problem = text;
    read_judge_options(j, o.judge);
    read_legacy_judge_options(j, o.judge);
    read_field(j, "llm", o.llm);
    if (j.contains("llm_config") && j["llm_config"].is_string()) {
      o.llm_config = j["llm_config"].get<std::string>();
    }
    read_field(j, "llm_record", o.llm_record);
    read_field(j, "iterations", o.iterations);
    read_field(j, "steps", o.steps);
    read_field(j, "fix_attempts", o.fix_attempts);
    read_field(j, "techniques", o.techniques);
    read_optional_field(j, "max_evaluations", o.max_evaluations);
    read_optional_field(j, "time_limit_minutes", o.time_limit_minutes);
    read_optional_field(j, "max_tokens", o.max_tokens);
    read_optional_field(j, "max_cost_usd", o.max_cost_usd);
    read_field(j, "allow_bf16", o.allow_bf16);
    read_field(j, "regions", o.regions);
    read_field(j, "graph_first", o.graph_first);
    read_field(j, "prebuild", o.prebuild);
    read_field(j, "other_hardware_weight", o.other_hardware_weight);
    text.clear();
    read_field(j, "kb", text);
    o.kb = text;
    text.clear();
    read_field(j, "out", text);
    o.out = text;
    read_field(j, "prestart", o.prestart);
    read_field(j, "eval_server", o.eval_server);  // a resume's override only, never recorded
  } catch (const nlohmann::json::exception& e) {
    throw input_error(std::string("the run's options are not readable: ") + e.what(),
                      "the run directory is damaged; start a new run with --out");
  }
  return o;
}

}  // namespace mblast
