#include "core/optimize_support.hpp"

#include <algorithm>

#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/sol_problem.hpp"

namespace mblast::optimize_detail {

namespace fs = std::filesystem;

Agents make_agents(const OptimizeOptions& options, std::int64_t tokens_before, double cost_before) {
  LlmSettings settings = load_llm_settings(options.llm_config, options.llm);
  if (!options.llm_record.empty()) settings.record_path = options.llm_record;
  Agents agents;
  agents.ledger = std::make_shared<LlmLedger>(settings.prices);
  if (options.max_cost_usd) require_prices_for_cost_budget(settings);
  std::optional<std::int64_t> max_tokens;
  std::optional<double> max_cost;
  if (options.max_tokens)
    max_tokens = std::max<std::int64_t>(0, *options.max_tokens - tokens_before);
  if (options.max_cost_usd) max_cost = std::max(0.0, *options.max_cost_usd - cost_before);
  agents.ledger->set_budget(max_tokens, max_cost);
  const std::string actor_spec = spec_for_role("actor", settings);
  if (actor_spec == "none") {
    agents.description = "none (built-in techniques only)";
    return agents;
  }
  auto client = [&](const std::string& role) -> std::unique_ptr<LlmClient> {
    const std::string spec = spec_for_role(role, settings);
    if (spec == "none") return nullptr;
    return std::make_unique<BudgetClient>(make_llm_client(spec, settings), agents.ledger);
  };
  agents.actor = client("actor");
  agents.fix = client("fix");
  agents.critic = client("critic");
  agents.replay = actor_spec.rfind("replay:", 0) == 0;
  agents.description = actor_spec;
  if (agents.replay) agents.description += " (replay of recorded or authored answers, no live LLM)";
  return agents;
}

std::optional<double> extra_number(const EvalResult& result, const char* key) {
  const auto it = result.extra.find(key);
  if (it == result.extra.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string task_name(const fs::path& problem) {
  // A SOL-ExecBench problem is named by its directory, as a problem file by its file name.
  const fs::path absolute =
      is_sol_problem(problem) ? sol_problem_directory(problem) : fs::absolute(problem);
  const std::string folder = absolute.parent_path().filename().string();
  return (folder.empty() ? std::string() : folder + "/") + absolute.stem().string();
}

std::vector<std::string> allowed_requirements(const OptimizeOptions& options,
                                              const EvalResult& baseline) {
  std::vector<std::string> allowed;
  if (options.judge.device != "cpu") allowed.push_back("gpu");
  const std::string& torch = baseline.torch_version;
  if (!torch.empty() && torch[0] >= '2' && torch[0] <= '9') allowed.push_back("torch_compile");
  if (options.judge.allow_tf32) allowed.push_back("allow_tf32");
  if (options.allow_bf16) allowed.push_back("allow_bf16");
  return allowed;
}

namespace {

// The built-in's list of that kind (groups, needs_ops, after); empty for LLM techniques.
const std::vector<std::string>& builtin_list(const TechniqueRow& t,
                                             std::vector<std::string> BuiltinSpec::*list) {
  static const std::vector<std::string> none;
  return t.builtin ? (*t.builtin).*list : none;
}

bool shares_a_group(const std::vector<std::string>& groups, const std::vector<TechniqueRow>& all,
                    const std::string& applied_id) {
  const std::string id = technique_of(applied_id);
  const auto applied =
      std::find_if(all.begin(), all.end(), [&](const TechniqueRow& t) { return t.id == id; });
  if (applied == all.end()) return false;
  for (const auto& group : builtin_list(*applied, &BuiltinSpec::groups)) {
    if (std::find(groups.begin(), groups.end(), group) != groups.end()) return true;
  }
  return false;
}

bool problem_has_needed_ops(const TechniqueRow& technique,
                            const std::vector<std::string>& problem_ops) {
  const auto& needed = builtin_list(technique, &BuiltinSpec::needs_ops);
  if (needed.empty() || problem_ops.empty()) return true;
  for (const auto& fragment : needed) {
    for (const auto& op : problem_ops) {
      if (op.find(fragment) != std::string::npos) return true;
    }
  }
  return false;
}

// Whether every built-in that `technique` names in `after` has been judged in this run (on any
// base, whatever its outcome), or cannot be picked in it (outside `only`).
bool prerequisites_judged(const TechniqueRow& technique, const Current& current, const Tried& tried,
                          const std::vector<std::string>& only) {
  for (const auto& id : builtin_list(technique, &BuiltinSpec::after)) {
    if (!only.empty() && std::find(only.begin(), only.end(), id) == only.end()) continue;
    if (std::find(current.lineage.begin(), current.lineage.end(), id) != current.lineage.end())
      continue;
    const bool judged = std::any_of(tried.begin(), tried.end(),
                                    [&](const auto& entry) { return entry.second == id; });
    if (!judged) return false;
  }
  return true;
}

}  // namespace

Base base_of(const Current& current) { return {current.file, current.lineage.size()}; }

std::optional<Base> reference_base(const Current& current) {
  if (current.lineage.empty()) return base_of(current);
  if (current.ancestry.empty()) return std::nullopt;
  return Base{current.ancestry.front(), 0};
}

std::string applied_name(const std::string& technique_id, const std::string& slot) {
  return is_region_slot(slot) ? technique_id + "@" + slot : technique_id;
}

std::string technique_of(const std::string& applied) {
  return applied.substr(0, applied.find('@'));
}

std::string tried_name(const std::string& technique_id, const std::string& slot, const Base& base) {
  std::string name = applied_name(technique_id, slot);
  for (const auto& again : base.then) name += "+" + again.technique_id;
  return name;
}

namespace {

// Whether lineage entry i left the implementation's file as it was: the graph-first round's
// CUDA graph, which wraps every later candidate rather than being part of it.
bool left_the_file_unchanged(const Current& current, std::size_t i) {
  if (current.ancestry.size() != current.lineage.size()) return false;
  const fs::path& after = i + 1 < current.ancestry.size() ? current.ancestry[i + 1] : current.file;
  return after == current.ancestry[i];
}

// A "first" built-in on the reference with the lineage's built-ins applied again over it; those
// sharing a group with it are replaced by it. None where an entry is no whole-model built-in.
std::optional<Base> first_builtin_base(const TechniqueRow& technique,
                                       const std::vector<TechniqueRow>& all,
                                       const Current& current) {
  if (current.lineage.empty()) return base_of(current);
  if (current.ancestry.empty()) return std::nullopt;
  const auto& groups = builtin_list(technique, &BuiltinSpec::groups);
  Base base{current.ancestry.front(), 0, {}};
  for (std::size_t i = 0; i < current.lineage.size(); ++i) {
    const std::string& applied = current.lineage[i];
    if (applied == technique.id) return std::nullopt;
    if (shares_a_group(groups, all, applied) || left_the_file_unchanged(current, i)) continue;
    const auto row = std::find_if(all.begin(), all.end(),
                                  [&](const TechniqueRow& t) { return t.id == applied; });
    if (row == all.end() || !row->builtin || row->builtin->transform.empty() || row->builtin->first)
      return std::nullopt;  // an LLM's candidate or a region's built-in ("id@slot")
    base.then.push_back({applied, row->builtin->transform});
  }
  return base;
}

}  // namespace

std::optional<Base> builtin_base(const TechniqueRow& technique,
                                 const std::vector<TechniqueRow>& all, const Current& current) {
  if (technique.builtin && technique.builtin->first)
    return first_builtin_base(technique, all, current);
  const auto& groups = builtin_list(technique, &BuiltinSpec::groups);
  for (std::size_t i = 0; i < current.lineage.size(); ++i) {
    if (current.lineage[i] == technique.id) return std::nullopt;
    if (!shares_a_group(groups, all, current.lineage[i])) continue;
    if (current.ancestry.size() != current.lineage.size()) return std::nullopt;
    return Base{current.ancestry[i], i};
  }
  return base_of(current);
}

Base EligibleTechniques::base_for(const TechniqueRow& technique, const Current& current) const {
  const auto found = builtin_bases.find(technique.id);
  return found != builtin_bases.end() ? found->second : base_of(current);
}

EligibleTechniques eligible_techniques(const std::vector<TechniqueRow>& all,
                                       const std::string& slot, const Current& current,
                                       const Tried& tried, const std::vector<std::string>& only,
                                       bool builtins_need_a_candidate,
                                       const std::vector<std::string>& problem_ops) {
  EligibleTechniques eligible;
  for (const auto& technique : all) {
    if (!only.empty() && std::find(only.begin(), only.end(), technique.id) == only.end()) continue;
    if (technique.implementer == "builtin") {
      const bool region = is_region_slot(slot);
      if (region ? !(technique.builtin && technique.builtin->takes_region) : slot != "model")
        continue;
      const auto base = region ? reference_base(current) : builtin_base(technique, all, current);
      if (!base) continue;
      if (builtins_need_a_candidate && base->is_reference()) continue;
      if (tried.count({base->file.string(), tried_name(technique.id, slot, *base)})) continue;
      if (!problem_has_needed_ops(technique, problem_ops)) continue;
      if (!avoided_because(technique, current.signature.metrics()).empty()) continue;
      if (!prerequisites_judged(technique, current, tried, only)) continue;
      eligible.builtin_bases.emplace(technique.id, *base);
    }
    eligible.techniques.push_back(technique);
  }
  return eligible;
}

std::vector<std::string> signature_op_names(const ProfileSignature& signature) {
  std::vector<std::string> names;
  for (const auto* list : {&signature.ops(), &signature.regions()}) {
    for (const auto& op : *list) names.push_back(op.name);
  }
  return names;
}

std::vector<StateEvidence> state_evidence(const Classification& classification) {
  std::vector<StateEvidence> evidence;
  for (const auto& condition : classification.evidence) {
    if (!condition.value) continue;
    evidence.push_back({condition.metric, condition.op, condition.threshold, *condition.value});
  }
  return evidence;
}

std::string candidate_hash(const fs::path& file) {
  return sha256_hex(read_input_file(file, "candidate"));
}

AttemptRow attempt_row(const Evaluation& evaluation, const std::string& run_id,
                       const std::string& task, const std::string& slot,
                       const std::string& state_id, const std::string& technique_id,
                       const std::string& backend, const std::string& hardware, int iteration,
                       int step, std::optional<double> reward) {
  const EvalResult& r = evaluation.result;
  AttemptRow row;
  row.run_id = run_id;
  row.task = task;
  row.slot = slot;
  row.state_id = state_id;
  row.technique_id = technique_id;
  row.backend = backend;
  row.hardware = hardware;
  row.iteration = iteration;
  row.step = step;
  row.candidate_hash = candidate_hash(evaluation.file);
  row.outcome = to_string(evaluation.outcome);
  if (r.error) row.error = trim_error(*r.error, 2000);
  if (evaluation.outcome == Outcome::correct) {
    row.time_ms = r.cand_ms;
    row.speedup = r.speedup;
  }
  row.baseline_ms = r.ref_ms;
  row.reward = reward;
  row.tokens = evaluation.tokens;
  row.created_at = r.judged_at;
  return row;
}

ProfileSignature baseline_signature(const EvalResult& reference_judged) {
  const nlohmann::json& eager = reference_judged.reference_signature.to_json();
  const nlohmann::json& candidate = reference_judged.signature.to_json();
  if (!eager.is_object()) return reference_judged.signature;
  if (!candidate.is_object() || !candidate.contains("ncu"))
    return reference_judged.reference_signature;
  nlohmann::json merged = eager;
  merged["ncu"] = candidate["ncu"];
  if (candidate.contains("profiler")) merged["profiler"] = candidate["profiler"];
  return ProfileSignature::from_json(merged);
}

std::vector<MetricDelta> profile_deltas(const ProfileSignature& before,
                                        const ProfileSignature& after) {
  std::vector<MetricDelta> deltas;
  const Signature& a = before.metrics();
  const Signature& b = after.metrics();
  for (const char* metric : {"total_ms", "kernel_count", "launch_overhead_fraction", "sol_fraction",
                             "memory_sol_fraction", "compute_sol_fraction", "tensor_core_fraction",
                             "vector_instruction_fraction", "access_bytes_ratio"}) {
    const auto x = a.find(metric);
    const auto y = b.find(metric);
    if (x != a.end() && y != b.end()) deltas.push_back({metric, x->second, y->second});
  }
  return deltas;
}

StepRecord step_record_base(int iteration, int step, int global_step, const Slot& slot,
                            const Classification& state, const TechniqueRow& technique) {
  StepRecord record;
  record.iteration = iteration;
  record.step = step;
  record.global_step = global_step;
  record.slot = slot.id;
  record.slot_share = slot.time_share;
  record.state = state.state_id;
  record.state_evidence = state.explain();
  record.technique = technique.id;
  record.implementer = technique.implementer;
  return record;
}

void add_ncu_state(StepRecord& record, const ProfileSignature& signature) {
  const auto ncu = signature.to_json().is_object()
                       ? signature.to_json().value("ncu", nlohmann::json())
                       : nlohmann::json();
  if (!ncu.is_object()) return;  // --profile ncu not asked
  if (const auto implied = ncu_implied_state(signature)) {
    record.ncu_state = implied->state_id;
    record.ncu_evidence = implied->because;
  } else {
    record.ncu_evidence = ncu.value("status", "failed") + ": " + ncu.value("reason", "");
  }
}

}  // namespace mblast::optimize_detail
