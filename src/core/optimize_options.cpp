// OptimizeOptions to and from a run's config.json, so that --resume continues with them.
#include "mblast/error.hpp"
#include "mblast/optimize.hpp"

namespace mblast {

namespace {

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

template <typename T>
void read_optional(const nlohmann::json& json, const char* key, std::optional<T>& out) {
  if (!json.contains(key)) return;
  if (json[key].is_null()) {
    out.reset();
  } else {
    out = json[key].get<T>();
  }
}

template <typename T>
void read(const nlohmann::json& json, const char* key, T& out) {
  if (json.contains(key) && !json[key].is_null()) out = json[key].get<T>();
}

}  // namespace

nlohmann::json options_to_json(const OptimizeOptions& o) {
  return {{"problem", o.problem.string()},
          {"backend", o.backend},
          {"device", o.device},
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
          {"atol", o.atol},
          {"rtol", o.rtol},
          {"strict_tolerance", o.strict_tolerance},
          {"allow_tf32", o.allow_tf32},
          {"allow_bf16", o.allow_bf16},
          {"seed", o.seed},
          {"verify_seeds", o.verify_seeds},
          {"timing_runs", o.timing_runs},
          {"timing_autograd", o.timing_autograd},
          {"eval_timeout_s", o.eval_timeout.count()},
          {"compile_timeout_s", o.compile_timeout.count()},
          {"kb", o.kb.string()},
          {"out", o.out.string()},
          {"cache_dir", o.cache_dir.string()},
          {"prestart", o.prestart},
          {"target", o.target}};
}

OptimizeOptions options_from_json(const nlohmann::json& j) {
  OptimizeOptions o;
  try {
    std::string text;
    read(j, "problem", text);
    o.problem = text;
    read(j, "backend", o.backend);
    read(j, "device", o.device);
    read(j, "llm", o.llm);
    if (j.contains("llm_config") && j["llm_config"].is_string()) {
      o.llm_config = j["llm_config"].get<std::string>();
    }
    read(j, "llm_record", o.llm_record);
    read(j, "iterations", o.iterations);
    read(j, "steps", o.steps);
    read(j, "fix_attempts", o.fix_attempts);
    read(j, "techniques", o.techniques);
    read_optional(j, "max_evaluations", o.max_evaluations);
    read_optional(j, "time_limit_minutes", o.time_limit_minutes);
    read_optional(j, "max_tokens", o.max_tokens);
    read_optional(j, "max_cost_usd", o.max_cost_usd);
    read(j, "atol", o.atol);
    read(j, "rtol", o.rtol);
    read(j, "strict_tolerance", o.strict_tolerance);
    read(j, "allow_tf32", o.allow_tf32);
    read(j, "allow_bf16", o.allow_bf16);
    read(j, "seed", o.seed);
    read(j, "verify_seeds", o.verify_seeds);
    read(j, "timing_runs", o.timing_runs);
    read(j, "timing_autograd", o.timing_autograd);
    std::int64_t timeout = o.eval_timeout.count();
    read(j, "eval_timeout_s", timeout);
    o.eval_timeout = std::chrono::seconds(timeout);
    std::int64_t compile_timeout = o.compile_timeout.count();
    read(j, "compile_timeout_s", compile_timeout);
    o.compile_timeout = std::chrono::seconds(compile_timeout);
    read(j, "kb", text);
    o.kb = text;
    text.clear();
    read(j, "out", text);
    o.out = text;
    text.clear();
    read(j, "cache_dir", text);
    o.cache_dir = text;
    read(j, "prestart", o.prestart);
    if (j.contains("target") && j["target"].is_object()) {
      o.target = j["target"].get<std::map<std::string, std::string>>();
    }
    // Runs recorded before the backends declared their options kept them as fields.
    for (const auto& [legacy, key] : {std::pair<const char*, const char*>{"rvv_vlen", "vlen"},
                                      {"remote", "remote"},
                                      {"remote_mblast", "remote_mblast"},
                                      {"remote_prefix", "remote_prefix"}}) {
      const auto it = j.find(legacy);
      if (it == j.end() || it->is_null()) continue;
      o.target[key] = it->is_string() ? it->get<std::string>() : it->dump();
    }
  } catch (const nlohmann::json::exception& e) {
    throw input_error(std::string("the run's options are not readable: ") + e.what(),
                      "the run directory is damaged; start a new run with --out");
  }
  return o;
}

}  // namespace mblast
