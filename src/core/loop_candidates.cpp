// The loop's candidates (docs/ARCHITECTURE.md §1): built-ins, LLM candidates and their fixes
// written to the run and judged, prebuilt guesses, the current implementation's lineage.
#include "core/loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "agents/format.hpp"
#include "core/loop_detail.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;
using namespace optimize_detail;
using namespace loop_detail;

Evaluation Loop::write_and_judge(const std::string& stem, const std::string& source,
                                 std::int64_t tokens, bool compile_baseline) {
  Evaluation evaluation;
  evaluation.file = run_.save_candidate(stem, source, backend_.traits().candidate_extension);
  evaluation.result = judge_.judge(evaluation.file, compile_baseline);
  if (evaluation.result.stopped_by_time_limit) {
    throw TimeLimitReached(
        "the time limit of " + std::to_string(*options_.time_limit_minutes) +
        " min is spent (the evaluation in flight was stopped; --resume judges it)");
  }
  evaluation.outcome = evaluation.result.outcome();
  evaluation.tokens = tokens;
  return evaluation;
}

void Loop::note_if_it_changes_nothing(const TechniqueRow& technique, Outcome outcome) {
  if (outcome == Outcome::skipped && technique.builtin && technique.builtin->first)
    changes_nothing_.insert(technique.id);
}

void Loop::drop_what_changes_nothing(std::vector<TechniqueRow>& techniques) const {
  std::erase_if(techniques, [&](const TechniqueRow& t) { return changes_nothing_.count(t.id); });
}

// The answer is technique id -> why it would change nothing. On another thread where judging
// leaves the host idle (a GPU device): the check (a Python that builds the Model: 5.5 s on an
// H100 host, call 67) then costs no wall. Else after the reference is judged, whose timing it
// would disturb.
std::future<std::map<std::string, std::string>> Loop::start_nothing_to_change_check() {
  std::vector<std::pair<std::string, std::string>> first;  // technique id, transform
  for (const auto& technique : kb_.techniques(options_.judge.backend)) {
    if (!technique.builtin || !technique.builtin->first) continue;
    const auto& only = options_.techniques;
    if (!only.empty() && std::find(only.begin(), only.end(), technique.id) == only.end()) continue;
    first.emplace_back(technique.id, technique.builtin->transform);
  }
  const bool beside = backend_.host_idle_while_judging() && !first.empty();
  return std::async(beside ? std::launch::async : std::launch::deferred, [this, first] {
    std::vector<std::string> transforms;
    for (const auto& [id, transform] : first) transforms.push_back(transform);
    const auto why = first.empty() ? std::map<std::string, std::string>()
                                   : backend_.nothing_to_change(transforms);
    std::map<std::string, std::string> by_technique;
    for (const auto& [id, transform] : first) {
      const auto found = why.find(transform);
      if (found != why.end() && !found->second.empty()) by_technique.emplace(id, found->second);
    }
    return by_technique;
  });
}

void Loop::drop_first_builtins_with_nothing_to_change(
    const std::map<std::string, std::string>& why_by_technique) {
  for (const auto& [id, why] : why_by_technique) {
    if (changes_nothing_.insert(id).second) note(id + " is not offered: " + why);
  }
}

namespace {

// The backend's transform of a built-in choice: the technique's, then the base's re-applied ones.
std::string builtin_transform(const TechniqueRow& technique, const Base& base) {
  std::string transform = technique.builtin ? technique.builtin->transform : std::string();
  for (const auto& again : base.then) transform += "+" + again.transform;
  return transform;
}

}  // namespace

// --prebuild: the built-in the selector would choose after this step if the step changed
// nothing, made now and handed to the backend to compile while this step is judged. A wrong
// guess costs only the background compile.
void Loop::prebuild_next(const Choice& choice, int global) {
  if (!options_.prebuild || graph_round_ == GraphRound::pending) return;
  try {
    const std::optional<Choice> next = guess_next_choice(choice, global);
    // Only the same slot's: which slot goes next depends on this step's outcome.
    if (!next || next->technique.implementer != "builtin" || next->slot != choice.slot) return;
    const std::string transform = builtin_transform(next->technique, next->base);
    const auto made = backend_.builtin(transform, next->base.file, next->base.is_reference(),
                                       slots_[next->slot].ops);
    if (!made.source) return;
    // As builtin() judges it first: without a graph, also inside a legal round.
    const std::string stem = fmt::format("s{:03d}-{}", global + 1, transform);
    const fs::path file =
        run_.save_prebuilt(stem, *made.source, backend_.traits().candidate_extension);
    if (file.empty()) return;
    spdlog::debug("--prebuild: step {} may choose {}; compiling {} meanwhile", global + 1,
                  next->technique.id, file.filename().string());
    backend_.prebuild(file);
  } catch (const std::exception& e) {  // a guess never fails the step it was made for
    spdlog::debug("--prebuild: no guess at step {}: {}", global + 1, e.what());
  }
}

// The selector's choice for the next step if `choice` changed nothing: with it counted as tried.
std::optional<Loop::Choice> Loop::guess_next_choice(const Choice& choice, int global) {
  const std::pair<std::string, std::string> judged{
      choice.base.file.string(),
      tried_name(choice.technique.id, slots_[choice.slot].id, choice.base)};
  struct Guessing {
    Loop& loop;
    std::pair<std::string, std::string> judged;
    bool added;
    ~Guessing() {
      loop.predicting_ = false;
      if (added) loop.tried_.erase(judged);
    }
  } guessing{*this, judged, tried_.insert(judged).second};
  predicting_ = true;
  std::string why_none;
  return choose(global + 1, why_none);
}

std::vector<Evaluation> Loop::builtin(const Choice& choice, int global) {
  const std::string transform = builtin_transform(choice.technique, choice.base);
  const auto made = backend_.builtin(transform, choice.base.file, choice.base.is_reference(),
                                     slots_[choice.slot].ops);
  if (!made.source) {
    // The transform found nothing better than the current kernel (or does not apply to it):
    // no new candidate, a step without gain rather than a failure.
    Evaluation skipped;
    skipped.file = choice.base.file;
    skipped.outcome = Outcome::skipped;
    skipped.result = EvalResult::failure(ErrorKind::skipped, made.why_not);
    return {skipped};
  }
  const std::string stem = fmt::format("s{:03d}-{}", global, transform);
  if (graph_round_ == GraphRound::pending || stays_outermost(choice)) {
    Evaluation graph = write_and_judge(stem, *made.source, 0);
    graph.inner = choice.base.file;  // the graph wraps what later steps build on
    return {graph};
  }
  if (wraps_in_graph(choice.technique)) return judged_with_and_without_graph(stem, *made.source);
  return {write_and_judge(stem, *made.source, 0)};
}

std::vector<Evaluation> Loop::llm_candidate(const TechniqueRow& technique, const Slot& slot,
                                            const Classification& state, int global) {
  ActorContext actor;
  actor.task = task_;
  actor.problem_source = problem_source_;
  actor.backend = options_.judge.backend;
  actor.device = options_.judge.device == "cpu" ? "cpu" : "cuda";
  actor.format = backend_.traits().agent_format(options_.judge.device);
  actor.hardware = hardware_;
  actor.slot = slot.id;
  if (!slot.ops.empty()) {
    actor.slot_detail = fmt::format(
        "the region of the forward's torch.fx ops {} takes {:.0f}% of the reference's time",
        fmt::join(slot.ops, ", "), slot.time_share * 100);
    if (!slot.input_shapes.empty())
      actor.slot_detail += fmt::format("; it reads {}", fmt::join(slot.input_shapes, ", "));
    actor.slot_code = slot.region_code;
  } else if (slot.id != "model") {
    actor.slot_detail =
        fmt::format("{} takes {:.0f}% of the reference's time", slot.id, slot.time_share * 100);
  }
  actor.current.is_reference = current_.is_reference;
  if (!current_.is_reference) actor.current.source = read_input_file(current_.file, "candidate");
  actor.current.time_ms = current_.time_ms;
  actor.current.baseline_ms = baseline_.ref_ms;
  actor.current.speedup = current_.speedup;
  for (const auto& s : states_) {
    if (s.id == state.state_id) actor.state = s;
  }
  actor.evidence = state_evidence(state);
  actor.technique = technique;
  actor.claims = kb_.claims(state.state_id, technique.id, 8);
  for (const auto& claim : actor.claims) claims_shown_.push_back(claim.id);
  actor.similar =
      kb_.top_implementations(sha256_hex(problem_source_).substr(0, 16), options_.judge.backend, 2);
  actor.past_attempts = kb_.attempts_for_task(task_, 8);
  actor.heavy_ops = heavy_ops_;
  actor.precision = {options_.judge.atol, options_.judge.rtol, options_.judge.allow_tf32,
                     options_.allow_bf16};
  actor.sampling.seed = options_.judge.seed + static_cast<std::uint64_t>(global);

  std::vector<Evaluation> evaluations;
  std::string source;
  std::int64_t tokens = 0;
  try {
    AgentResult written = run_actor(*agents_.actor, actor);
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& block : written.files) files.emplace_back(block.file, block.code);
    source = backend_.assemble(files);
    tokens = written.response.input_tokens + written.response.output_tokens;
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input && !dynamic_cast<const ResponseError*>(&e)) throw;
    Evaluation none;
    none.file = run_.save_candidate(fmt::format("s{:03d}-no-candidate", global),
                                    "# the actor's answer held no candidate\n");
    none.outcome = Outcome::compile_error;
    none.result = EvalResult::failure(
        ErrorKind::compile,
        std::string("the actor's answer held no usable candidate: ") + e.what());
    return {none};
  }
  const std::string stem =
      fmt::format("s{:03d}-{}", global, technique.id.substr(technique.id.find('/') + 1));
  evaluations.push_back(write_and_judge(stem, source, tokens));

  std::vector<FixAttempt> earlier;
  for (int fix = 1; fix <= options_.fix_attempts && agents_.fix; ++fix) {
    const Evaluation& failed = evaluations.back();
    if (failed.outcome == Outcome::correct) break;
    note(fmt::format(
        "step {}: {} ({}); asking the fix agent ({}/{})", global, to_string(failed.outcome),
        agents::first_line(failure_report(failed.result).error, 120), fix, options_.fix_attempts));
    FixContext context;
    context.task = task_;
    context.problem_source = problem_source_;
    context.backend = options_.judge.backend;
    context.device = actor.device;
    context.format = actor.format;
    context.hardware = hardware_;
    context.technique = technique;
    context.slot = actor.slot;
    context.slot_detail = actor.slot_detail;
    context.slot_code = actor.slot_code;
    context.candidate_source = read_input_file(failed.file, "candidate");
    context.failure = failure_report(failed.result);
    context.earlier = earlier;
    context.heavy_ops = heavy_ops_;
    context.precision = actor.precision;
    context.sampling.seed = actor.sampling.seed;
    try {
      AgentResult repaired = run_fix(*agents_.fix, context);
      evaluations.push_back(
          write_and_judge(fmt::format("{}-fix{}", stem, fix), repaired.candidate_source,
                          repaired.response.input_tokens + repaired.response.output_tokens));
      evaluations.back().fix = true;
    } catch (const Error& e) {
      if (e.code() != ExitCode::bad_input && !dynamic_cast<const ResponseError*>(&e)) throw;
      spdlog::warn("fix agent: no usable candidate in its answer: {}", e.what());
      break;
    }
    earlier.push_back({context.failure.outcome, trim_error(context.failure.error, 600)});
  }
  return evaluations;
}

CriticContext Loop::critic_context(const TrajectoryStep& judged) const {
  CriticContext context;
  context.task = task_;
  context.backend = options_.judge.backend;
  context.hardware = hardware_;
  context.trajectory = rollout_;
  if (context.trajectory.empty() || context.trajectory.back().step != judged.step) {
    context.trajectory.push_back(judged);
  }
  for (const auto& s : states_) {
    if (s.id == judged.state_id) context.states.push_back(s);
  }
  if (auto technique = kb_.technique(judged.technique_id)) context.techniques.push_back(*technique);
  context.claims = kb_.claims(judged.state_id, judged.technique_id, 8);
  return context;
}

void Loop::accept(const Evaluation& evaluation, const Choice& choice, int global) {
  if (!evaluation.inner.empty()) keep_the_graph_outermost(choice.technique);
  descend(current_, choice.base, applied_name(choice.technique.id, slots_[choice.slot].id));
  current_.file = evaluation.inner.empty() ? evaluation.file : evaluation.inner;
  current_.is_reference = false;
  current_.speedup = evaluation.result.speedup.value_or(1.0);
  current_.time_ms = evaluation.result.cand_ms;
  current_.signature = evaluation.result.signature;
  note(fmt::format("step {}: {} is the new best, {:.3f}x over {}", global, choice.technique.id,
                   current_.speedup,
                   baseline_.speedup_baseline.empty() ? "eager" : baseline_.speedup_baseline));
}

// What a native judge adds to the baseline for the run's record: how the problem was shrunk,
// which baselines it could not measure.
nlohmann::json Loop::baseline_extras() const {
  nlohmann::json extras = nlohmann::json::object();
  for (const char* key : {"shrink", "missing_baselines"}) {
    if (baseline_.extra.contains(key)) extras[key] = baseline_.extra[key];
  }
  return extras;
}

}  // namespace mblast
