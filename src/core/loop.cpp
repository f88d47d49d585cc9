// The MAIC-RL loop (docs/ARCHITECTURE.md §1). Read `Loop::run` first: baseline, then iterations of
// steps, each step: slot -> state -> technique -> candidate (+ fixes) -> judge -> reward, critic,
// KB.
#include "core/loop.hpp"

#include "core/loop_detail.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "agents/format.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;
using namespace optimize_detail;
using namespace loop_detail;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_optimize_stop_requested{false};

namespace {

// Writes the run's log.txt: every progress event and every log message while the loop runs.
class RunLog {
 public:
  explicit RunLog(const fs::path& file)
      : sink_(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string())),
        events_("run", sink_) {
    sink_->set_pattern("%Y-%m-%dT%H:%M:%S.%e [%l] %v");
    events_.flush_on(spdlog::level::info);
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~RunLog() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;
  void event(const ProgressEvent& e) {
    events_.info("{} {}", e.kind,
                 e.data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

 private:
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> sink_;
  spdlog::logger events_;
};

// -v: what the selectors saw: the slot, the state with its evidence, the best-scored arms.
void log_choice(int global, const std::string& slot, const Classification& state,
                const Selection& selection) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  std::string evidence;
  for (const auto& c : state.evidence) {
    if (!c.value) continue;
    evidence += fmt::format("{}{} {} {} ({:.4g})", evidence.empty() ? "" : ", ", c.metric, c.op,
                            c.threshold, *c.value);
  }
  spdlog::debug("step {}: slot {}, state {} [{}]", global, slot, state.state_id, evidence);
  std::size_t shown = 0;
  for (const auto& arm : selection.arms) {
    if (arm.removed || ++shown > 5) continue;
    spdlog::debug(
        "step {}:   arm {} score {:.3g} (mean {:.3g}, bonus {:.3g}, n {:.3g} here + {:.3g} prior)",
        global, arm.technique_id, arm.score, arm.mean, arm.bonus, arm.n_local, arm.n_prior);
  }
}

nlohmann::json tolerance_json(const EvalResult& result) {
  return result.tolerance ? result.tolerance->to_json() : nlohmann::json();
}

// The base a recorded step applied its technique to (runs recorded before bases were: the
// current implementation).
Base recorded_base(const StepRecord& record, const fs::path& run_dir, const Current& current) {
  if (record.base.empty()) return base_of(current);
  const std::size_t depth = record.base_depth.value_or(current.lineage.size());
  Base base{run_dir / "candidates" / record.base, std::min(depth, current.lineage.size()), {}};
  for (const auto& id : record.base_then) base.then.push_back({id, ""});
  return base;
}

}  // namespace

namespace loop_detail {

// The baselines a native backend measured for the reference, without the reference's speedups.
std::vector<BaselineFigure> baseline_figures(const EvalResult& reference) {
  std::vector<BaselineFigure> figures;
  if (!reference.baselines) return figures;
  for (const auto& b : *reference.baselines) figures.push_back(b.figure());
  return figures;
}

// The current implementation becomes `technique` applied to `base`, with the built-ins the base
// applies again over it. Those have no file of their own: the ancestry stops at the technique.
void descend(Current& current, const Base& base, const std::string& technique) {
  const std::size_t depth = std::min(base.depth, current.lineage.size());
  current.lineage.resize(depth);
  current.ancestry.resize(std::min(depth, current.ancestry.size()));
  current.ancestry.push_back(base.file);
  current.lineage.push_back(technique);
  for (const auto& again : base.then) current.lineage.push_back(again.technique_id);
}

}  // namespace loop_detail

Resumed Resumed::from(const RunDir& run) {
  Resumed r;
  for (const auto& line : run.steps()) r.steps.push_back(StepRecord::from_json(line));
  r.evaluations = run.evaluations().size();
  if (!r.steps.empty()) {
    const StepRecord& last = r.steps.back();
    r.tokens = last.tokens_total;
    r.cost_usd = last.cost_total_usd.value_or(0.0);
    r.seconds = last.run_seconds;
  }
  return r;
}

Loop::Loop(OptimizeOptions options, Backend& backend, KnowledgeBase& kb, Agents& agents,
           RunDir& run, Resumed resumed, const ProgressFn& progress)
    : options_(std::move(options)),
      backend_(backend),
      kb_(kb),
      agents_(agents),
      run_(run),
      resumed_(std::move(resumed)),
      progress_(progress),
      judge_(backend, run) {}

RunSummary Loop::run() {
  RunLog log(run_.log_file());
  const ProgressFn user_progress = progress_;
  progress_ = [&](const ProgressEvent& e) {
    log.event(e);
    if (user_progress) user_progress(e);
  };
  const auto judged_source = backend_.judged_problem_source();
  problem_source_ = judged_source ? *judged_source : read_input_file(options_.problem, "problem");
  task_ = task_name(options_.problem);
  states_ = kb_.states();
  check_techniques();
  const RunStart start{task_,
                       run_.path().string(),
                       kb_.path().string(),
                       options_.judge.backend,
                       options_.judge.device,
                       agents_.description,
                       !agents_.available(),
                       resumed_.steps.size()};
  progress_({.kind = "start", .data = start.to_json(), .start = start});
  if (!agents_.available()) {
    note(
        "no LLM configured (set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass --llm): this run "
        "tries the built-in techniques only");
  }
  set_time_limit_deadline();
  try {
    baseline();
  } catch (const TimeLimitReached& e) {
    return finish("budget", e.what());
  }
  run_id_ = run_.config().value("run_id", "");
  restore(resumed_.steps);

  const int total_steps = options_.iterations * options_.steps;
  for (int global = steps_done_ + 1; global <= total_steps; ++global) {
    const int iteration = (global - 1) / options_.steps + 1;
    const int step_in_iteration = (global - 1) % options_.steps + 1;
    if (step_in_iteration == 1) rollout_.clear();
    if (auto reason = budget_spent()) return finish("budget", *reason);
    if (g_optimize_stop_requested) {
      return finish("interrupted", "stopped by a signal; resume with --resume");
    }
    bool stop = false;
    std::string stop_reason;
    try {
      step(iteration, step_in_iteration, global, stop, stop_reason);
    } catch (const LlmBudgetExhausted& e) {
      return finish("budget", e.what());
    } catch (const TimeLimitReached& e) {
      return finish("budget", e.what());
    } catch (const Error& e) {
      if (e.code() == ExitCode::bad_input) throw;
      return finish("llm_error", e.what());
    }
    if (stop) return finish("exhausted", stop_reason);
    ++steps_done_;
  }
  return finish("finished", "all " + std::to_string(total_steps) + " steps done");
}

void Loop::check_techniques() const {
  for (const auto& id : options_.techniques) {
    const auto technique = kb_.technique(id);
    if (!technique || std::find(technique->backends.begin(), technique->backends.end(),
                                options_.judge.backend) == technique->backends.end()) {
      throw input_error(
          "no technique " + id + " for the " + options_.judge.backend + " backend in the KB",
          "list them with `mblast kb query --kind techniques --backend " + options_.judge.backend +
              "`");
    }
  }
}

void Loop::baseline() {
  if (auto measured = backend_.measured_baseline()) {
    // The profile of the backend's own baseline kernel (native backends), when it has one.
    baseline_ = *measured;
    current_.signature = baseline_.signature;
  } else {
    auto nothing_to_change = start_nothing_to_change_check();
    const auto reference = backend_.builtin("reference", options_.problem, true, {});
    // Without torch.compile: compiling the reference took 4-25 s of the first minute of a level-3
    // run on the H200 before any step could start. The compile baseline comes from the compile
    // built-in's step on the reference, else after the last step (take_compile_baseline).
    const Evaluation judged = write_and_judge("reference", reference.source.value_or(""), 0);
    if (judged.outcome != Outcome::correct) {
      throw input_error(
          "the reference itself did not pass its own checks: " +
              nlohmann::json(judged.result.error.value_or("?")).dump(),
          "check that the problem is deterministic and runs on " + options_.judge.device);
    }
    baseline_ = judged.result;
    current_.file = judged.file;
    // The floor: the reference is a correct candidate of every run, at 1x by definition, so the
    // best (and its export) never reads below it; a candidate must beat it by kMinGain.
    best_ = BestCandidate{judged.file,
                          1.0,
                          baseline_.ref_ms,
                          baseline_.ref_ms,
                          "reference",
                          0,
                          extra_number(baseline_, "sol_score")};
    current_.signature = baseline_signature(baseline_);
    current_.time_ms = baseline_.ref_ms;
    drop_first_builtins_with_nothing_to_change(nothing_to_change.get());
    leave_calibration_out_of_the_time_limit();
  }
  hardware_ = backend_.hardware(baseline_);
  slots_ = slots_from_signature(current_.signature, agents_.available());
  if (options_.regions) add_region_slots();
  if (options_.graph_first) graph_round_ = GraphRound::pending;
  for (const auto& op : current_.signature.ops()) {
    if (op.share >= 0.1) heavy_ops_.push_back(op.name);
  }
  problem_ops_ = signature_op_names(current_.signature);
  RunBaseline reported{
      baseline_.ref_ms, baseline_.ref_cost, baseline_figures(baseline_), hardware_, {}};
  for (const auto& slot : slots_) reported.slots.push_back(slot.id);
  progress_({.kind = "baseline", .data = reported.to_json(), .baseline = reported});
  record_run_in_kb();
}

void Loop::record_run_in_kb() {
  nlohmann::json config = run_.config();
  if (!config.value("run_id", "").empty()) return;
  RunRow row;
  row.task = task_;
  row.backend = options_.judge.backend;
  row.hardware = hardware_;
  row.config = options_to_json(options_);
  row.budgets = {{"iterations", options_.iterations},
                 {"steps", options_.steps},
                 {"max_evaluations", optional_json(options_.max_evaluations)},
                 {"time_limit_minutes", optional_json(options_.time_limit_minutes)},
                 {"max_tokens", optional_json(options_.max_tokens)},
                 {"max_cost_usd", optional_json(options_.max_cost_usd)}};
  config["run_id"] = kb_.add_run(row);
  config["hardware"] = hardware_;
  config["baseline"] = {
      {"ref_ms", optional_json(baseline_.ref_ms)},
      {"torch_version", baseline_.torch_version.empty() ? nlohmann::json()
                                                        : nlohmann::json(baseline_.torch_version)},
      {"device_name",
       baseline_.device_name.empty() ? nlohmann::json() : nlohmann::json(baseline_.device_name)},
      {"tolerance", tolerance_json(baseline_)}};
  config["baseline"].update(baseline_extras());
  run_.write_config(config);
}

// Rebuilds the loop's state from the steps a run recorded before it was interrupted.
void Loop::restore(const std::vector<StepRecord>& steps) {
  for (const auto& record : steps) {
    ++steps_done_;
    for (auto& slot : slots_) {
      if (slot.id != record.slot) continue;
      ++slot.visits;
      slot.steps_without_gain = record.improved ? 0 : slot.steps_without_gain + 1;
    }
    const std::string& technique = record.technique;
    restore_graph_round(record);
    const Base base = recorded_base(record, run_.path(), current_);
    const std::string applied = applied_name(technique, record.slot);
    tried_.insert({base.file.string(), tried_name(technique, record.slot, base)});
    if (record.outcome == Outcome::correct) ++correct_candidates_;
    const std::optional<TechniqueRow> row = kb_.technique(technique);
    if (row) note_if_it_changes_nothing(*row, record.outcome);
    const fs::path file = run_.path() / "candidates" / record.candidate;
    const std::optional<EvalResult> stored = run_.stored_result(file);
    if (const auto eager = record.eager_ms ? record.eager_ms
                           : stored        ? stored->ref_ms
                                           : std::nullopt)
      step_eager_ms_.push_back(*eager);
    if (row && stored) take_compile_baseline(*row, base.is_reference(), *stored);
    if (record.new_best_candidate) {
      best_ = BestCandidate{file,         record.speedup.value_or(0.0),
                            std::nullopt, std::nullopt,
                            technique,    record.global_step};
      if (stored) {
        best_->time_ms = stored->cand_ms;
        best_->baseline_ms = stored->ref_ms;
        best_->sol_score = extra_number(*stored, "sol_score");
      }
    }
    if (record.improved) {
      if (row && !record.inner.empty()) keep_the_graph_outermost(*row);
      current_.file = record.inner.empty() ? file : run_.path() / "candidates" / record.inner;
      current_.is_reference = false;
      current_.speedup = record.speedup.value_or(1.0);
      current_.signature = stored ? stored->signature : ProfileSignature();
      current_.time_ms = stored ? stored->cand_ms : std::nullopt;
      descend(current_, base, applied);
    }
  }
  if (!steps.empty()) {
    note("resuming after step " + std::to_string(steps_done_) + "; " +
         std::to_string(resumed_.evaluations) + " evaluations done are not repeated");
  }
}

// Eager's time in each of the run's evaluations so far: the reference's and every step's.
std::vector<double> Loop::run_eager_ms() const {
  std::vector<double> eager_ms = step_eager_ms_;
  if (baseline_.ref_ms) eager_ms.push_back(*baseline_.ref_ms);
  return eager_ms;
}

// The run's eager times and the contender's, for the selection; none where speedups are over
// another baseline (a native backend's).
EagerTimes Loop::eager_times(std::optional<double> contender_eager_ms) const {
  if (!baseline_.speedup_baseline.empty()) return {};
  EagerTimes eager{run_eager_ms()};
  if (contender_eager_ms) eager.ms.push_back(*contender_eager_ms);
  return eager;
}

// An evaluation in flight when the run's time is up is stopped, and judged again on resume.
void Loop::set_time_limit_deadline() {
  if (!options_.time_limit_minutes) return;
  const double left_s = *options_.time_limit_minutes * 60 - resumed_.seconds + uncounted_seconds_;
  backend_.set_deadline(started_ + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(std::max(0.0, left_s))));
}

void Loop::leave_calibration_out_of_the_time_limit() {
  const auto calibration = extra_number(baseline_, "calibration_seconds");
  if (!calibration || *calibration <= 0 || !options_.time_limit_minutes) return;
  uncounted_seconds_ = *calibration;
  set_time_limit_deadline();
  // A resumed run reads the reference's stored result: the calibration was its first run's, whose
  // seconds it carries on with, and that run said so already.
  if (judge_.evaluations_run() == 0) return;
  note(fmt::format(
      "the device's ceilings were measured for the first time on this machine ({:.1f} s, cached "
      "for later runs): not counted in the time limit",
      *calibration));
}

double Loop::run_seconds() const { return resumed_.seconds + seconds_since(started_); }

std::optional<std::string> Loop::budget_spent() const {
  if (options_.time_limit_minutes &&
      run_seconds() - uncounted_seconds_ >= *options_.time_limit_minutes * 60) {
    return "the time limit of " + std::to_string(*options_.time_limit_minutes) + " min is spent";
  }
  if (options_.max_evaluations &&
      static_cast<int>(evaluations_total()) >= *options_.max_evaluations) {
    return "the limit of " + std::to_string(*options_.max_evaluations) + " evaluations is reached";
  }
  if (agents_.ledger && agents_.ledger->exhausted()) return agents_.ledger->exhausted_reason();
  return std::nullopt;
}

// ---- one step -------------------------------------------------------------------------------

std::optional<StepRecord> Loop::step(int iteration, int step_in_iteration, int global, bool& stop,
                                     std::string& stop_reason) {
  const auto started = Clock::now();
  backend_.begin_step(global);
  const auto choice = choose(global, stop_reason);
  if (!choice) {
    stop = true;
    return std::nullopt;
  }
  StepRecord record = step_record_base(iteration, step_in_iteration, global, slots_[choice->slot],
                                       choice->state, choice->technique);
  add_ncu_state(record, current_.signature);
  progress_({.kind = "step_start", .data = record.step_start_json(), .step = record});
  record.decided_by = choice->decided_by;
  record.arm = choice->arm;
  record.base = choice->base.file.filename().string();
  record.base_depth = choice->base.depth;
  for (const auto& again : choice->base.then) record.base_then.push_back(again.technique_id);
  prebuild_next(*choice, global);
  const std::vector<Evaluation> evaluations = produce(*choice, global);
  record.claims_shown = std::exchange(claims_shown_, {});
  record.inner = evaluations.back().inner.filename().string();
  tried_.insert({choice->base.file.string(),
                 tried_name(choice->technique.id, slots_[choice->slot].id, choice->base)});
  const Evaluation& final = evaluations.back();
  note_if_it_changes_nothing(choice->technique, final.outcome);
  take_compile_baseline(choice->technique, choice->base.is_reference(), final.result);
  const Scored scored = score(final);
  end_graph_round(*choice, final, scored.improved);
  rollout_.push_back(trajectory_step(global, *choice, final, scored));
  // The LLM critic is asked outside the KB transaction; the rule-based one inside.
  const auto verdict = ask_the_critic(rollout_.back());
  const Committed committed =
      commit(*choice, evaluations, scored, iteration, step_in_iteration, verdict);
  update(*choice, final, scored, global);
  record =
      step_record(std::move(record), evaluations, scored, committed, verdict.has_value(), started);
  record_region_reuse(record, *choice, scored);
  const nlohmann::json line = record.to_json();
  run_.append_step(line);
  progress_({.kind = "step", .data = line, .step = record});
  return record;
}

void Loop::record_region_reuse(StepRecord& record, const Choice& choice, const Scored& scored) {
  if (!is_region_slot(slots_[choice.slot].id)) return;
  record.region_reward = attempt_reward(choice, scored);
  if (!choice.reused) return;
  record.reused_attempt = choice.reused->id;
  record.reuse_held = scored.correct && record.region_reward.value_or(0) > 0;
  const bool same_shapes = choice.reused->region_key == slots_[choice.slot].region_key;
  record.reuse_shapes = same_shapes ? "same" : "other";
  note(fmt::format(
      "step {}: {} retried {} where it sped up the same computation before, at {} shapes "
      "(attempt {}, task {}): {}",
      record.global_step, slots_[choice.slot].id, choice.technique.id, *record.reuse_shapes,
      choice.reused->id.substr(0, 12), choice.reused->task,
      *record.reuse_held ? "it held" : "it did not hold"));
}

namespace {

std::optional<ArmEvidence> arm_evidence(const Selection& selection,
                                        const std::string& region_signature) {
  for (const auto& arm : selection.arms) {
    if (arm.technique_id != selection.technique_id) continue;
    return ArmEvidence{region_signature.empty() ? "model" : region_signature, arm.n_local,
                       arm.n_prior, arm.mean, arm.bonus};
  }
  return std::nullopt;
}

}  // namespace

// Operator selector -> state classifier -> technique selector. A slot with nothing left to try
// gives its turn to the next by priority.
std::optional<Loop::Choice> Loop::choose(int global, std::string& why_none) {
  Choice choice;
  choice.state = classify(states_, current_.signature.metrics());
  SelectorConfig selector;
  selector.llm_available = agents_.available();
  selector.allowed_requirements = allowed_requirements(options_, baseline_);
  selector.try_first = try_first_of(states_, choice.state.state_id);
  selector.other_hardware_weight = options_.other_hardware_weight;
  if (graph_round_ == GraphRound::pending) {
    if (auto graph = graph_round_choice(choice.state, selector)) return graph;
  }
  const auto all = kb_.techniques(options_.judge.backend);
  const auto model_stats = kb_.reward_stats(options_.judge.backend, choice.state.state_id);
  for (const std::size_t slot : slots_by_priority(slots_, OperatorSelectorConfig{})) {
    const Slot& at = slots_[slot];
    auto eligible = eligible_techniques(all, at.id, current_, tried_, options_.techniques,
                                        backend_.traits().builtins_need_a_candidate,
                                        at.ops.empty() ? problem_ops_ : at.op_kinds);
    drop_the_rounds_graph(eligible.techniques);
    drop_what_changes_nothing(eligible.techniques);
    choice.slot = slot;
    if ((choice.reused = region_reuse(at, eligible.techniques, selector))) {
      choice.decided_by = "region reuse";
      choice.technique = *kb_.technique(*choice.reused->technique_id);
      choice.base = eligible.base_for(choice.technique, current_);
      return choice;
    }
    // A region's arms are scored on the statistics of its signature, not the whole model's.
    const auto stats =
        at.region_signature.empty()
            ? model_stats
            : kb_.region_stats(options_.judge.backend, choice.state.state_id, at.region_signature);
    const Selection selection = select_technique(
        eligible.techniques, stats, choice.state.state_id, options_.judge.backend, hardware_,
        selector, options_.judge.seed * 1000003u + static_cast<std::uint64_t>(global));
    if (!predicting_) log_choice(global, at.id, choice.state, selection);
    if (selection.technique_id.empty()) continue;
    choice.arm = arm_evidence(selection, at.region_signature);
    choice.technique = *kb_.technique(selection.technique_id);
    choice.base = eligible.base_for(choice.technique, current_);
    return choice;
  }
  why_none = "every technique the selector may pick in state " + choice.state.state_id +
             " has been tried on the current implementation" +
             (slots_.size() > 1 ? " in every slot" : "") +
             (agents_.available() ? "" : " (built-ins only: no LLM configured)");
  return std::nullopt;
}

// The actor (or a built-in transform) and the fix agent; every candidate judged.
std::vector<Evaluation> Loop::produce(const Choice& choice, int global) {
  if (choice.technique.implementer == "builtin") return builtin(choice, global);
  return llm_candidate(choice.technique, slots_[choice.slot], choice.state, global);
}

Loop::Scored Loop::score(const Evaluation& final) const {
  Scored s;
  s.correct = final.outcome == Outcome::correct;
  s.skipped = final.outcome == Outcome::skipped;
  if (s.correct) s.speedup = final.result.speedup;
  // A skipped step (a built-in with nothing to change) earns what it gained: nothing.
  s.reward =
      final.outcome == Outcome::skipped ? 0.0 : step_reward(s.correct, s.speedup, current_.speedup);
  if (!s.correct || !s.speedup) return s;
  const Standing contender{*s.speedup, final.result.cand_ms};
  const EagerTimes eager = eager_times(final.result.ref_ms);
  const auto standing = [&](double speedup, bool is_reference, std::optional<double> time_ms) {
    return Standing{speedup, is_reference ? eager.median() : time_ms};
  };
  s.improved =
      select(contender, standing(current_.speedup, current_.is_reference, current_.time_ms), eager)
          .replaces;
  if (!best_) {
    s.new_best = true;
    return s;
  }
  SelectionVerdict verdict =
      select(contender,
             standing(best_->speedup, best_->technique_id == "reference", best_->time_ms), eager);
  s.new_best = verdict.replaces;
  s.selection_note = std::move(verdict.why);
  return s;
}

TrajectoryStep Loop::trajectory_step(int global, const Choice& choice, const Evaluation& final,
                                     const Scored& scored) const {
  TrajectoryStep judged{global,
                        "",
                        choice.state.state_id,
                        choice.technique.id,
                        final.outcome,
                        current_.time_ms,
                        std::nullopt,
                        scored.speedup,
                        final.result.error.value_or(""),
                        profile_deltas(current_.signature, final.result.signature)};
  if (scored.correct) judged.time_after_ms = final.result.cand_ms;
  judged.speedup_before = current_.speedup;
  return judged;
}

std::optional<CriticVerdict> Loop::ask_the_critic(const TrajectoryStep& judged) {
  if (!agents_.critic) return std::nullopt;
  try {
    return ask_critic(*agents_.critic, critic_context(judged), kb_);
  } catch (const LlmBudgetExhausted&) {
    throw;
  } catch (const Error& e) {
    if (e.code() == ExitCode::bad_input) throw;
    if (agents_.replay) {
      spdlog::debug(
          "critic: the cassette holds no answer for this step; the rule-based critic judges it");
    } else {
      spdlog::warn("critic: no answer ({}); the rule-based critic judges this step", e.what());
    }
  }
  return std::nullopt;
}

// The reward the KB keeps for a step. A region's gain on the model is bounded by its share, so a
// region step is rewarded as the region's own implied speedup and kept in the statistics of its
// signature (region_stats); a region of a run recorded before regions had signatures keeps none.
std::optional<double> Loop::attempt_reward(const Choice& choice, const Scored& scored) const {
  const Slot& slot = slots_[choice.slot];
  if (!is_region_slot(slot.id)) return scored.reward;
  if (slot.region_signature.empty()) return std::nullopt;
  if (scored.skipped) return scored.reward;  // nothing was judged: nothing gained
  const double base_speedup = choice.base.is_reference() ? 1.0 : current_.speedup;
  return region_reward(scored.correct, scored.speedup, base_speedup, slot.time_share);
}

// One transaction: attempts with the reward, the implementation, the critic's claims, totals.
Loop::Committed Loop::commit(const Choice& choice, const std::vector<Evaluation>& evaluations,
                             const Scored& scored, int iteration, int step_in_iteration,
                             const std::optional<CriticVerdict>& verdict) {
  Committed committed;
  const Evaluation& final = evaluations.back();
  const Slot& slot = slots_[choice.slot];
  const std::optional<double> reward = attempt_reward(choice, scored);
  kb_.transaction([&] {
    for (std::size_t i = 0; i < evaluations.size(); ++i) {
      const bool last = i + 1 == evaluations.size();
      AttemptRow row = attempt_row(evaluations[i], run_id_, task_, slot.id, choice.state.state_id,
                                   choice.technique.id, options_.judge.backend, hardware_,
                                   iteration, step_in_iteration, last ? reward : std::nullopt);
      if (!slot.region_signature.empty()) row.region = slot.region_signature;
      if (!slot.region_key.empty()) row.region_key = slot.region_key;
      if (!slot.region_computation.empty()) row.computation_key = slot.region_computation;
      committed.attempt_id = kb_.add_attempt(std::move(row));
    }
    rollout_.back().attempt_id = committed.attempt_id;
    if (scored.new_best) {
      ImplementationRow impl;
      impl.task = task_;
      impl.task_signature = sha256_hex(problem_source_).substr(0, 16);
      impl.backend = options_.judge.backend;
      impl.hardware = hardware_;
      impl.technique_id = choice.technique.id;
      impl.run_id = run_id_;
      impl.attempt_id = committed.attempt_id;
      impl.language =
          backend_.traits().agent_format(options_.judge.device).outputs.front().language;
      impl.source = read_input_file(final.file, "candidate");
      impl.speedup = scored.speedup;
      impl.time_ms = rollout_.back().time_after_ms;
      impl.baseline_ms = final.result.ref_ms;
      if (final.result.tolerance) {
        impl.atol = final.result.tolerance->atol;
        impl.rtol = final.result.tolerance->rtol;
      }
      kb_.add_implementation(impl);
    }
    committed.critic =
        verdict ? apply_critic(*verdict, kb_, committed.attempt_id, options_.judge.backend)
                : rule_based_critic(critic_context(rollout_.back()), kb_, committed.attempt_id);
    if (auto run = kb_.run(run_id_)) {
      const Usage u = usage();
      run->tokens_in = u.input_tokens;
      run->tokens_out = u.output_tokens;
      run->cost_usd = u.cost_usd.value_or(0.0);
      if (scored.new_best) run->best_speedup = scored.speedup;
      kb_.update_run(*run);
    }
  });
  return committed;
}

// The loop's own state after a step (the step log, written next, is the resume point).
void Loop::update(const Choice& choice, const Evaluation& final, const Scored& scored, int global) {
  Slot& slot = slots_[choice.slot];
  ++slot.visits;
  slot.steps_without_gain = scored.improved ? 0 : slot.steps_without_gain + 1;
  if (scored.correct) ++correct_candidates_;
  if (scored.new_best) {
    best_ = BestCandidate{final.file,
                          *scored.speedup,
                          final.result.cand_ms,
                          final.result.ref_ms,
                          choice.technique.id,
                          global,
                          extra_number(final.result, "sol_score")};
  }
  if (scored.improved) accept(final, choice, global);
  if (scored.selection_note) {
    note(fmt::format("step {}: {} is {}the new best: {}", global, choice.technique.id,
                     scored.new_best ? "" : "not ", *scored.selection_note));
  }
}

StepRecord Loop::step_record(StepRecord record, const std::vector<Evaluation>& evaluations,
                             const Scored& scored, const Committed& committed, bool llm_critic,
                             Clock::time_point started) {
  const Evaluation& final = evaluations.back();
  const std::string& error = rollout_.back().error;
  record.candidate = final.file.filename().string();
  for (const auto& e : evaluations)
    record.candidates.push_back({e.file.filename().string(), e.outcome});
  record.fixes = static_cast<int>(std::count_if(evaluations.begin(), evaluations.end(),
                                                [](const Evaluation& e) { return e.fix; }));
  record.outcome = final.outcome;
  if (!error.empty()) record.error = agents::first_line(error, 300);
  record.speedup = scored.speedup;
  record.eager_ms = final.result.ref_ms;
  if (record.eager_ms) step_eager_ms_.push_back(*record.eager_ms);
  record.reward = scored.reward;
  record.improved = scored.improved;
  record.new_best_candidate = scored.new_best;
  record.selection_note = scored.selection_note;
  if (best_) record.best_speedup = best_->speedup;
  record.attempt_id = committed.attempt_id;
  record.claims = static_cast<int>(committed.critic.accepted.size());
  record.critic = llm_critic ? "llm" : "rule-based";
  const Usage u = usage();
  record.tokens_total = u.tokens;
  record.cost_total_usd = u.cost_usd;
  record.evaluations_total = static_cast<int>(evaluations_total());
  record.seconds = seconds_since(started);
  record.run_seconds = run_seconds();
  return record;
}

}  // namespace mblast
