#include "mblast/judge_options.hpp"

#include "mblast/json_fields.hpp"

namespace mblast {

namespace {

void read_seconds(const nlohmann::json& json, const char* key, std::chrono::seconds& out) {
  std::int64_t seconds = out.count();
  read_field(json, key, seconds);
  out = std::chrono::seconds(seconds);
}

}  // namespace

nlohmann::json judge_options_to_json(const JudgeOptions& o) {
  return {{"backend", o.backend},
          {"device", o.device},
          {"seeds", o.seeds},
          {"seed", o.seed},
          {"atol", o.atol},
          {"rtol", o.rtol},
          {"tolerance_policy", o.tolerance_policy},
          {"allow_tf32", o.allow_tf32},
          {"profiler", o.profiler},
          {"ncu_kernels", o.ncu_kernels},
          {"timing_runs", o.timing_runs},
          {"timing_autograd", o.timing_autograd},
          {"timeout_s", o.timeout.count()},
          {"compile_timeout_s", o.compile_timeout.count()},
          {"cache_dir", o.cache_dir.string()},
          {"target", o.target}};
}

void read_judge_options(const nlohmann::json& j, JudgeOptions& o) {
  read_field(j, "backend", o.backend);
  read_field(j, "device", o.device);
  read_field(j, "seeds", o.seeds);
  read_field(j, "seed", o.seed);
  read_field(j, "atol", o.atol);
  read_field(j, "rtol", o.rtol);
  read_field(j, "tolerance_policy", o.tolerance_policy);
  read_field(j, "allow_tf32", o.allow_tf32);
  read_field(j, "profiler", o.profiler);
  read_field(j, "ncu_kernels", o.ncu_kernels);
  read_field(j, "timing_runs", o.timing_runs);
  read_field(j, "timing_autograd", o.timing_autograd);
  read_seconds(j, "timeout_s", o.timeout);
  read_seconds(j, "compile_timeout_s", o.compile_timeout);
  std::string cache_dir = o.cache_dir.string();
  read_field(j, "cache_dir", cache_dir);
  o.cache_dir = cache_dir;
  if (j.contains("target") && j["target"].is_object()) {
    o.target = j["target"].get<std::map<std::string, std::string>>();
  }
}

}  // namespace mblast
