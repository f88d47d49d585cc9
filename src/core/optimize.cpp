// The MAIC-RL loop (DESIGN.md §1). Read `Loop::run` first: baseline, then iterations of steps,
// each step: slot -> state -> technique -> candidate (+ fixes) -> judge -> reward, critic, KB.
#include "mblast/optimize.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

#include "agents/format.hpp"
#include "core/optimize_support.hpp"
#include "mblast/error.hpp"
#include "mblast/python.hpp"
#include "cuda/cuda_eval.hpp"

namespace mblast {

namespace fs = std::filesystem;
using namespace optimize_detail;
using Clock = std::chrono::steady_clock;

namespace {

std::atomic<bool> g_stop_requested{false};

// The run's --time-limit ran out while an evaluation was in flight.
class TimeLimitReached : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A correct candidate must beat the current one by this much to replace it: timing noise of a
// median of many runs is about 1%.
constexpr double kMinGain = 1.01;

struct StepResult {
  nlohmann::json record;
  bool stop = false;
  std::string stop_reason;
};

class Loop {
 public:
  Loop(OptimizeOptions options, RunDir run, const ProgressFn& progress)
      : options_(std::move(options)),
        run_(std::move(run)),
        progress_(progress),
        kb_(options_.kb),
        python_(find_python()),
        judge_(eval_options(), python_, run_, static_cast<std::size_t>(options_.prestart)) {}

  nlohmann::json run();

 private:
  static fs::path find_python();
  EvalOptions eval_options() const;
  void note(const std::string& text) { progress_({"note", {{"text", text}}}); }

  void baseline();
  void restore(const std::vector<nlohmann::json>& steps);
  std::optional<std::string> budget_spent(int global_step) const;
  StepResult step(int iteration, int step, int global_step);
  Evaluation write_and_judge(const std::string& stem, const std::string& source,
                             std::int64_t tokens, bool compile_baseline = false);
  std::vector<Evaluation> llm_candidate(const TechniqueRow& technique, const Slot& slot,
                                        const Classification& state, int global_step);
  Evaluation builtin(const TechniqueRow& technique, int global_step);
  std::string candidate_source(const AgentResult& written);
  CriticContext critic_context(const TrajectoryStep& judged) const;
  void accept(const Evaluation& evaluation, const TechniqueRow& technique, int global_step);
  nlohmann::json finish(const std::string& status, const std::string& reason);
  nlohmann::json totals() const;
  // Evaluations of the whole run: before a resume and by this process's judge.
  std::size_t evaluations_total() const {
    return evaluations_before_ + static_cast<std::size_t>(judge_.evaluations_run());
  }

  OptimizeOptions options_;
  RunDir run_;
  ProgressFn progress_;
  KnowledgeBase kb_;
  fs::path python_;
  Judge judge_;
  Agents agents_;
  std::string task_, hardware_, run_id_, problem_source_;
  nlohmann::json baseline_;
  std::vector<StateRow> states_;
  std::vector<Slot> slots_;
  Current current_;
  std::optional<BestCandidate> best_;
  std::set<std::string> tried_on_current_;
  std::vector<TrajectoryStep> rollout_;  // this iteration's steps, for the critic
  std::vector<std::string> heavy_ops_;
  Clock::time_point started_ = Clock::now();
  double seconds_before_ = 0;  // spent by the run before a resume
  std::int64_t tokens_before_ = 0;
  double cost_before_ = 0;
  int steps_done_ = 0;
  int correct_candidates_ = 0;
  std::size_t evaluations_before_ = 0;  // judged by the run before a resume
};

fs::path Loop::find_python() {
  std::string tried;
  auto python = find_torch_python(&tried);
  if (!python) {
    throw input_error("no Python with PyTorch found (tried " + tried + ")",
                      "apt-get install python3-torch, or set MBLAST_PYTHON");
  }
  return *python;
}

EvalOptions Loop::eval_options() const {
  EvalOptions e;
  e.problem = fs::absolute(options_.problem);
  e.backend = options_.backend;
  e.device = options_.device;
  e.seeds = options_.verify_seeds;
  e.seed = options_.seed;
  e.atol = options_.atol;
  e.rtol = options_.rtol;
  e.tolerance_policy = options_.strict_tolerance ? "strict" : "eager-widened";
  e.allow_tf32 = options_.allow_tf32;
  e.timing_runs = options_.timing_runs;
  e.profile = true;  // every candidate's signature classifies the state of the next step
  e.timeout = options_.eval_timeout;
  e.compile_timeout = options_.compile_timeout;
  e.rvv_vlen = options_.rvv_vlen;
  e.remote = options_.remote;
  e.remote_mblast = options_.remote_mblast;
  e.remote_prefix = options_.remote_prefix;
  e.cache_dir = options_.cache_dir.empty() ? default_cache_dir() : fs::absolute(options_.cache_dir);
  return e;
}

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

nlohmann::json Loop::run() {
  RunLog log(run_.log_file());
  const ProgressFn user_progress = progress_;
  progress_ = [&](const ProgressEvent& e) {
    log.event(e);
    if (user_progress) user_progress(e);
  };
  problem_source_ = read_text_file(options_.problem, "problem");
  task_ = task_name(options_.problem);
  const auto recorded_steps = run_.steps();
  evaluations_before_ = run_.evaluations().size();
  if (!recorded_steps.empty()) {
    const auto& last = recorded_steps.back();
    tokens_before_ = last.value("tokens_total", std::int64_t{0});
    cost_before_ = last.value("cost_total_usd", 0.0);
    seconds_before_ = last.value("run_seconds", 0.0);
  }
  agents_ = make_agents(options_, tokens_before_, cost_before_);
  states_ = kb_.states();
  for (const auto& id : options_.techniques) {
    const auto technique = kb_.technique(id);
    if (!technique || std::find(technique->backends.begin(), technique->backends.end(),
                                options_.backend) == technique->backends.end()) {
      throw input_error(
          "no technique " + id + " for the " + options_.backend + " backend in the KB",
          "list them with `mblast kb query --kind techniques --backend " + options_.backend + "`");
    }
  }
  progress_({"start",
             {{"task", task_},
              {"run_dir", run_.path().string()},
              {"kb", kb_.path().string()},
              {"backend", options_.backend},
              {"device", options_.device},
              {"llm", agents_.description},
              {"builtin_only", !agents_.available()},
              {"resumed_steps", recorded_steps.size()}}});
  if (!agents_.available()) {
    note(
        "no LLM configured (set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass --llm): this run "
        "tries the built-in techniques only");
  }
  if (options_.time_limit_minutes) {
    // An evaluation in flight when the run's time is up is stopped, and judged again on resume.
    const double left_s = *options_.time_limit_minutes * 60 - seconds_before_;
    judge_.set_deadline(started_ + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(std::max(0.0, left_s))));
  }
  try {
    baseline();
  } catch (const TimeLimitReached& e) {
    return finish("budget", e.what());
  }
  run_id_ = run_.config().value("run_id", "");
  restore(recorded_steps);

  const int total_steps = options_.iterations * options_.steps;
  for (int global = steps_done_ + 1; global <= total_steps; ++global) {
    const int iteration = (global - 1) / options_.steps + 1;
    const int step_in_iteration = (global - 1) % options_.steps + 1;
    if (step_in_iteration == 1) rollout_.clear();
    if (auto reason = budget_spent(global)) return finish("budget", *reason);
    if (g_stop_requested) return finish("interrupted", "stopped by a signal; resume with --resume");
    StepResult result;
    try {
      result = step(iteration, step_in_iteration, global);
    } catch (const LlmBudgetExhausted& e) {
      return finish("budget", e.what());
    } catch (const TimeLimitReached& e) {
      return finish("budget", e.what());
    } catch (const Error& e) {
      if (e.code() == ExitCode::bad_input) throw;
      return finish("llm_error", e.what());
    }
    if (result.stop) return finish("exhausted", result.stop_reason);
    ++steps_done_;
  }
  return finish("finished", "all " + std::to_string(total_steps) + " steps done");
}

void Loop::baseline() {
  if (judge_.native()) {
    // The native baselines (PyTorch on the CPU, naive OpenCL, plain C) stand for the reference.
    baseline_ = judge_.native_baseline();
    hardware_ = judge_.native_backend().hardware();
    current_.signature = nlohmann::json::object();
  } else {
    const std::string source = builtin_candidate(python_, "reference", options_.problem, false);
    // The reference's judge also times torch.compile of it: the second baseline of reports.
    const Evaluation reference = write_and_judge("reference", source, 0, true);
    if (reference.outcome != "correct") {
      throw input_error("the reference itself did not pass its own checks: " +
                            reference.result.value("error", nlohmann::json("?")).dump(),
                        "check that the problem is deterministic and runs on " + options_.device);
    }
    baseline_ = reference.result;
    hardware_ = hardware_of(baseline_);
    current_.file = reference.file;
    current_.signature =
        baseline_.value("reference_signature", baseline_.value("signature", nlohmann::json()));
    current_.time_ms = number_field(baseline_, "ref_ms");
  }
  slots_ = slots_from_signature(current_.signature, agents_.available());
  for (const auto& op : current_.signature.value("ops", nlohmann::json::array())) {
    if (op.value("share", 0.0) >= 0.1) heavy_ops_.push_back(op.value("name", ""));
  }
  std::string slot_list;
  for (const auto& slot : slots_) slot_list += (slot_list.empty() ? "" : ", ") + slot.id;
  progress_({"baseline",
             {{"ref_ms", baseline_.value("ref_ms", nlohmann::json())},
              {"ref_cost", baseline_.value("ref_cost", nlohmann::json())},
              {"baselines", baseline_.value("baselines", nlohmann::json())},
              {"hardware", hardware_},
              {"slots", slot_list}}});
  nlohmann::json config = run_.config();
  if (config.value("run_id", "").empty()) {
    RunRow row;
    row.task = task_;
    row.backend = options_.backend;
    row.hardware = hardware_;
    row.config = options_to_json(options_);
    row.budgets = {
        {"iterations", options_.iterations},
        {"steps", options_.steps},
        {"max_evaluations", config["options"].value("max_evaluations", nlohmann::json())},
        {"time_limit_minutes", config["options"].value("time_limit_minutes", nlohmann::json())},
        {"max_tokens", config["options"].value("max_tokens", nlohmann::json())},
        {"max_cost_usd", config["options"].value("max_cost_usd", nlohmann::json())}};
    config["run_id"] = kb_.add_run(row);
    config["hardware"] = hardware_;
    config["baseline"] = {{"ref_ms", baseline_.value("ref_ms", nlohmann::json())},
                          {"torch_version", baseline_.value("torch_version", nlohmann::json())},
                          {"device_name", baseline_.value("device_name", nlohmann::json())},
                          {"tolerance", baseline_.value("tolerance", nlohmann::json())}};
    run_.write_config(config);
  }
}

// Rebuilds the loop's state from the steps a run recorded before it was interrupted.
void Loop::restore(const std::vector<nlohmann::json>& steps) {
  for (const auto& record : steps) {
    ++steps_done_;
    for (auto& slot : slots_) {
      if (slot.id != record.value("slot", "")) continue;
      ++slot.visits;
      slot.steps_without_gain = record.value("improved", false) ? 0 : slot.steps_without_gain + 1;
    }
    const std::string technique = record.value("technique", "");
    tried_on_current_.insert(technique);
    const std::string final_file = record.value("candidate", "");
    if (record.value("outcome", "") == "correct") ++correct_candidates_;
    if (record.value("new_best_candidate", false)) {
      const fs::path file = run_.path() / "candidates" / final_file;
      best_ = BestCandidate{file,      record.value("speedup", 0.0),  std::nullopt, std::nullopt,
                            technique, record.value("global_step", 0)};
      if (auto stored = run_.stored_result(file)) {
        best_->time_ms = number_field(*stored, "cand_ms");
        best_->baseline_ms = number_field(*stored, "ref_ms");
      }
    }
    if (record.value("improved", false)) {
      const fs::path file = run_.path() / "candidates" / final_file;
      const auto stored = run_.stored_result(file);
      current_.file = file;
      current_.is_reference = false;
      current_.speedup = record.value("speedup", 1.0);
      current_.signature = stored ? stored->value("signature", nlohmann::json()) : nlohmann::json();
      current_.time_ms = stored ? number_field(*stored, "cand_ms") : std::nullopt;
      current_.lineage.push_back(technique);
      tried_on_current_.clear();
    }
  }
  if (!steps.empty()) {
    note("resuming after step " + std::to_string(steps_done_) + "; " +
         std::to_string(evaluations_before_) + " evaluations done are not repeated");
  }
}

std::optional<std::string> Loop::budget_spent(int /*global_step*/) const {
  if (options_.time_limit_minutes) {
    const double seconds =
        seconds_before_ + std::chrono::duration<double>(Clock::now() - started_).count();
    if (seconds >= *options_.time_limit_minutes * 60) {
      return "the time limit of " + std::to_string(*options_.time_limit_minutes) + " min is spent";
    }
  }
  if (options_.max_evaluations &&
      static_cast<int>(evaluations_total()) >= *options_.max_evaluations) {
    return "the limit of " + std::to_string(*options_.max_evaluations) + " evaluations is reached";
  }
  if (agents_.ledger && agents_.ledger->exhausted()) return agents_.ledger->exhausted_reason();
  return std::nullopt;
}

StepResult Loop::step(int iteration, int step_in_iteration, int global) {
  const auto step_started = Clock::now();
  // Operator selector -> state classifier -> technique selector.
  Slot& slot = slots_[select_slot(slots_, OperatorSelectorConfig{})];
  const Classification state = classify(states_, signature_from_json(current_.signature));
  SelectorConfig selector;
  selector.llm_available = agents_.available();
  selector.allowed_requirements = allowed_requirements(options_, baseline_);
  const auto techniques =
      eligible_techniques(kb_.techniques(options_.backend), slot.id, current_, tried_on_current_,
                          options_.techniques, judge_.native());
  const Selection selection =
      select_technique(techniques, kb_.reward_stats(options_.backend, state.state_id),
                       state.state_id, options_.backend, hardware_, selector,
                       options_.seed * 1000003u + static_cast<std::uint64_t>(global));
  if (selection.technique_id.empty()) {
    return {{},
            true,
            "every technique the selector may pick in state " + state.state_id +
                " has been tried on the current implementation" +
                (agents_.available() ? "" : " (built-ins only: no LLM configured)")};
  }
  const TechniqueRow technique = *kb_.technique(selection.technique_id);
  nlohmann::json record =
      step_record_base(iteration, step_in_iteration, global, slot, state, technique);
  progress_({"step_start", record});

  // Actor (or built-in transform) and fix agent; every candidate judged.
  std::vector<Evaluation> evaluations;
  if (technique.implementer == "builtin") {
    evaluations.push_back(builtin(technique, global));
  } else {
    evaluations = llm_candidate(technique, slot, state, global);
  }
  tried_on_current_.insert(technique.id);
  const Evaluation& final = evaluations.back();
  const bool correct = final.outcome == "correct";
  std::optional<double> speedup;
  if (correct && final.result.value("speedup", nlohmann::json()).is_number()) {
    speedup = final.result["speedup"].get<double>();
  }
  // A skipped step (a built-in with nothing to change) earns what it gained: nothing.
  const double reward =
      final.outcome == "skipped" ? 0.0 : step_reward(correct, speedup, current_.speedup);
  const bool improved = correct && speedup && *speedup > current_.speedup * kMinGain;
  const bool new_best_candidate = correct && speedup && (!best_ || *speedup > best_->speedup);

  // Critic: the LLM's verdict is asked outside the KB transaction; the rule-based one inside.
  TrajectoryStep judged{
      global,
      "",
      state.state_id,
      technique.id,
      final.outcome,
      current_.time_ms,
      std::nullopt,
      speedup,
      final.result.value("error", nlohmann::json()).is_string()
          ? final.result["error"].get<std::string>()
          : "",
      profile_deltas(current_.signature, final.result.value("signature", nlohmann::json()))};
  if (correct && final.result.value("cand_ms", nlohmann::json()).is_number()) {
    judged.time_after_ms = final.result["cand_ms"].get<double>();
  }
  rollout_.push_back(judged);
  std::optional<CriticVerdict> verdict;
  if (agents_.critic) {
    try {
      verdict = ask_critic(*agents_.critic, critic_context(judged), kb_);
    } catch (const LlmBudgetExhausted&) {
      throw;
    } catch (const Error& e) {
      if (e.code() == ExitCode::bad_input) throw;
      if (agents_.replay) {
        spdlog::debug(
            "critic: the cassette holds no answer for this step; the rule-based critic "
            "judges it");
      } else {
        spdlog::warn("critic: no answer ({}); the rule-based critic judges this step", e.what());
      }
    }
  }

  // One transaction: attempts with the reward, the implementation, the critic's claims, totals.
  CriticOutcome critic;
  std::string attempt_id;
  kb_.transaction([&] {
    for (std::size_t i = 0; i < evaluations.size(); ++i) {
      const bool last = i + 1 == evaluations.size();
      attempt_id = kb_.add_attempt(
          attempt_row(evaluations[i], run_id_, task_, slot.id, state.state_id, technique.id,
                      options_.backend, hardware_, iteration, step_in_iteration,
                      last ? std::optional<double>(reward) : std::nullopt));
    }
    rollout_.back().attempt_id = attempt_id;
    if (new_best_candidate) {
      ImplementationRow impl;
      impl.task = task_;
      impl.task_signature = sha256_hex(problem_source_).substr(0, 16);
      impl.backend = options_.backend;
      impl.hardware = hardware_;
      impl.technique_id = technique.id;
      impl.run_id = run_id_;
      impl.attempt_id = attempt_id;
      impl.language = "python";
      impl.source = read_text_file(final.file, "candidate");
      impl.speedup = speedup;
      impl.time_ms = judged.time_after_ms;
      impl.baseline_ms = number_field(final.result, "ref_ms");
      impl.atol = number_field(final.result.value("tolerance", nlohmann::json()), "atol");
      impl.rtol = number_field(final.result.value("tolerance", nlohmann::json()), "rtol");
      kb_.add_implementation(impl);
    }
    critic = verdict ? apply_critic(*verdict, kb_, attempt_id, options_.backend)
                     : rule_based_critic(critic_context(rollout_.back()), kb_, attempt_id);
    if (auto run = kb_.run(run_id_)) {
      const auto t = totals();
      run->tokens_in = t.value("input_tokens", std::int64_t{0});
      run->tokens_out = t.value("output_tokens", std::int64_t{0});
      run->cost_usd =
          t.value("cost_usd", nlohmann::json(0.0)).is_number() ? t["cost_usd"].get<double>() : 0.0;
      if (new_best_candidate) run->best_speedup = speedup;
      kb_.update_run(*run);
    }
  });

  // The loop's own state, then the step log (the resume point).
  ++slot.visits;
  slot.steps_without_gain = improved ? 0 : slot.steps_without_gain + 1;
  if (correct) ++correct_candidates_;
  if (new_best_candidate) {
    best_ = BestCandidate{final.file,           *speedup,
                          judged.time_after_ms, number_field(final.result, "ref_ms"),
                          technique.id,         global};
  }
  if (improved) accept(final, technique, global);
  record["candidate"] = final.file.filename().string();
  record["candidates"] = nlohmann::json::array();
  for (const auto& e : evaluations) {
    record["candidates"].push_back({{"file", e.file.filename().string()}, {"outcome", e.outcome}});
  }
  record["fixes"] = evaluations.size() - 1;
  record["outcome"] = final.outcome;
  record["error"] = judged.error.empty() ? nlohmann::json()
                                         : nlohmann::json(agents::first_line(judged.error, 300));
  record["speedup"] = speedup ? nlohmann::json(*speedup) : nlohmann::json();
  record["reward"] = reward;
  record["improved"] = improved;
  record["new_best_candidate"] = new_best_candidate;
  record["best_speedup"] = best_ ? nlohmann::json(best_->speedup) : nlohmann::json();
  record["attempt_id"] = attempt_id;
  record["claims"] = critic.accepted.size();
  record["critic"] = verdict ? "llm" : "rule-based";
  const auto t = totals();
  record["tokens_total"] = t["tokens"];
  record["cost_total_usd"] = t.value("cost_usd", nlohmann::json());
  record["evaluations_total"] = evaluations_total();
  record["seconds"] = std::chrono::duration<double>(Clock::now() - step_started).count();
  record["run_seconds"] =
      seconds_before_ + std::chrono::duration<double>(Clock::now() - started_).count();
  run_.append_step(record);
  progress_({"step", record});
  return {record, false, ""};
}

Evaluation Loop::write_and_judge(const std::string& stem, const std::string& source,
                                 std::int64_t tokens, bool compile_baseline) {
  Evaluation evaluation;
  evaluation.file = run_.save_candidate(
      stem, source, judge_.native() ? judge_.native_backend().extension() : ".py");
  evaluation.result = judge_.judge(evaluation.file, compile_baseline);
  if (evaluation.result.value("stopped_by_time_limit", false)) {
    throw TimeLimitReached(
        "the time limit of " + std::to_string(*options_.time_limit_minutes) +
        " min is spent (the evaluation in flight was stopped; --resume judges it)");
  }
  evaluation.outcome = attempt_outcome(evaluation.result);
  evaluation.tokens = tokens;
  return evaluation;
}

Evaluation Loop::builtin(const TechniqueRow& technique, int global) {
  const std::string transform = technique.builtin.value("transform", "");
  std::string source;
  if (judge_.native()) {
    try {
      source = judge_.native_backend().builtin_variant(transform, current_.file, judge_.bundles());
    } catch (const Error& e) {
      if (e.code() == ExitCode::bad_input) throw;
      // The transform found nothing better than the current kernel (or does not apply to it):
      // no new candidate, a step without gain rather than a failure.
      Evaluation skipped;
      skipped.file = current_.file;
      skipped.outcome = "skipped";
      skipped.result = {{"correct", false}, {"error", e.what()}, {"error_kind", "skipped"}};
      return skipped;
    }
  } else if (current_.is_reference) {
    source = builtin_candidate(python_, transform, options_.problem, false);
  } else {
    source = builtin_candidate(python_, transform, current_.file, true);
  }
  return write_and_judge(fmt::format("s{:03d}-{}", global, transform), source, 0);
}

std::string Loop::candidate_source(const AgentResult& written) {
  if (!judge_.native()) return written.candidate_source;
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& block : written.files) files.emplace_back(block.file, block.code);
  return judge_.native_backend().assemble(files);
}

std::vector<Evaluation> Loop::llm_candidate(const TechniqueRow& technique, const Slot& slot,
                                            const Classification& state, int global) {
  ActorContext actor;
  actor.task = task_;
  actor.problem_source = problem_source_;
  actor.backend = options_.backend;
  actor.device = options_.device == "cpu" ? "cpu" : "cuda";
  actor.hardware = hardware_;
  actor.slot = slot.id;
  if (slot.id != "model") {
    actor.slot_detail =
        fmt::format("{} takes {:.0f}% of the reference's time", slot.id, slot.time_share * 100);
  }
  actor.current.is_reference = current_.is_reference;
  if (!current_.is_reference) actor.current.source = read_text_file(current_.file, "candidate");
  actor.current.time_ms = current_.time_ms;
  actor.current.baseline_ms = number_field(baseline_, "ref_ms");
  actor.current.speedup = current_.speedup;
  for (const auto& s : states_) {
    if (s.id == state.state_id) actor.state = s;
  }
  actor.evidence = state_evidence(state);
  actor.technique = technique;
  actor.claims = kb_.claims(state.state_id, technique.id, 8);
  actor.similar =
      kb_.top_implementations(sha256_hex(problem_source_).substr(0, 16), options_.backend, 2);
  actor.past_attempts = kb_.attempts_for_task(task_, 8);
  actor.heavy_ops = heavy_ops_;
  actor.precision = {options_.atol, options_.rtol, options_.allow_tf32, options_.allow_bf16};
  actor.sampling.seed = options_.seed + static_cast<std::uint64_t>(global);

  std::vector<Evaluation> evaluations;
  std::string source;
  std::int64_t tokens = 0;
  try {
    AgentResult written = run_actor(*agents_.actor, actor);
    source = candidate_source(written);
    tokens = written.response.input_tokens + written.response.output_tokens;
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input && !dynamic_cast<const ResponseError*>(&e)) throw;
    Evaluation none;
    none.file = run_.save_candidate(fmt::format("s{:03d}-no-candidate", global),
                                    "# the actor's answer held no candidate\n");
    none.outcome = "compile_error";
    none.result = {
        {"correct", false},
        {"error", std::string("the actor's answer held no usable candidate: ") + e.what()}};
    return {none};
  }
  const std::string stem =
      fmt::format("s{:03d}-{}", global, technique.id.substr(technique.id.find('/') + 1));
  evaluations.push_back(write_and_judge(stem, source, tokens));

  std::vector<FixAttempt> earlier;
  for (int fix = 1; fix <= options_.fix_attempts && agents_.fix; ++fix) {
    const Evaluation& failed = evaluations.back();
    if (failed.outcome == "correct") break;
    note(fmt::format("step {}: {} ({}); asking the fix agent ({}/{})", global, failed.outcome,
                     agents::first_line(failure_report(failed.result).error, 120), fix,
                     options_.fix_attempts));
    FixContext context;
    context.task = task_;
    context.problem_source = problem_source_;
    context.backend = options_.backend;
    context.device = actor.device;
    context.hardware = hardware_;
    context.technique = technique;
    context.candidate_source = read_text_file(failed.file, "candidate");
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
  context.backend = options_.backend;
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

void Loop::accept(const Evaluation& evaluation, const TechniqueRow& technique, int global) {
  current_.file = evaluation.file;
  current_.is_reference = false;
  current_.speedup = evaluation.result.value("speedup", 1.0);
  current_.time_ms = number_field(evaluation.result, "cand_ms");
  current_.signature = evaluation.result.value("signature", nlohmann::json());
  current_.lineage.push_back(technique.id);
  tried_on_current_.clear();
  note(fmt::format("step {}: {} is the new best, {:.3f}x over {}", global, technique.id,
                   current_.speedup, baseline_.value("speedup_baseline", "eager")));
}

// LLM usage of the whole run: this process's ledger plus what the run spent before a resume.
nlohmann::json Loop::totals() const {
  nlohmann::json t = agents_.ledger ? agents_.ledger->to_json() : nlohmann::json::object();
  const std::int64_t now =
      t.value("input_tokens", std::int64_t{0}) + t.value("output_tokens", std::int64_t{0});
  t["tokens"] = now + tokens_before_;
  const auto cost = t.value("cost_usd", nlohmann::json(0.0));
  t["cost_usd"] = cost.is_number() ? nlohmann::json(cost.get<double>() + cost_before_) : cost;
  return t;
}

nlohmann::json Loop::finish(const std::string& status, const std::string& reason) {
  judge_.stop_prestarting();
  const auto t = totals();
  const std::int64_t tokens = t["tokens"].get<std::int64_t>();
  nlohmann::json result = {
      {"status", status},
      {"stop_reason", reason},
      {"task", task_},
      {"problem", fs::absolute(options_.problem).string()},
      {"backend", options_.backend},
      {"device", options_.device},
      {"hardware", hardware_},
      {"llm", agents_.description},
      {"run_dir", run_.path().string()},
      {"run_id", run_id_},
      {"kb", kb_.path().string()},
      {"steps", steps_done_},
      {"evaluations", evaluations_total()},
      {"correct_candidates", correct_candidates_},
      {"correct", best_.has_value()},
      {"best_speedup", best_ ? nlohmann::json(best_->speedup) : nlohmann::json()},
      {"best_technique", best_ ? nlohmann::json(best_->technique_id) : nlohmann::json()},
      {"best_file", nlohmann::json()},
      {"kernelbench_file", nlohmann::json()},
      {"baseline_ms", baseline_.value("ref_ms", nlohmann::json())},
      {"baseline_cost", baseline_.value("ref_cost", nlohmann::json())},
      {"speedup_baseline", baseline_.value("speedup_baseline", nlohmann::json("eager"))},
      {"baselines", baseline_.value("baselines", nlohmann::json::array())},
      {"best_ms", best_ && best_->time_ms ? nlohmann::json(*best_->time_ms) : nlohmann::json()},
      {"compile_ms", baseline_.value("compile_ms", nlohmann::json())},
      {"speedup_vs_compile", nlohmann::json()},
      {"tokens", tokens},
      {"cost_usd", t["cost_usd"]},
      {"llm_usage", t},
      {"tolerance", baseline_.value("tolerance", nlohmann::json())},
      {"seconds",
       seconds_before_ + std::chrono::duration<double>(Clock::now() - started_).count()}};
  if (best_ && best_->time_ms && result["compile_ms"].is_number() && *best_->time_ms > 0) {
    // Both times come from their own interleaved runs against eager: compare them through it.
    const double eager_over_compile =
        baseline_.value("ref_ms", 0.0) > 0
            ? result["compile_ms"].get<double>() / baseline_["ref_ms"].get<double>()
            : 0;
    if (eager_over_compile > 0) result["speedup_vs_compile"] = best_->speedup * eager_over_compile;
  }
  if (best_) {
    const std::string best_name =
        judge_.native() ? "best" + judge_.native_backend().extension() : "best.py";
    run_.write_text(best_name, read_text_file(best_->file, "candidate"));
    result["best_file"] = (run_.path() / best_name).string();
    try {
      if (judge_.native()) throw job_error("KernelBench takes CUDA candidates only");
      export_kernelbench(best_->file, run_.path() / "best_kernelbench.py", python_);
      result["kernelbench_file"] = (run_.path() / "best_kernelbench.py").string();
    } catch (const Error& e) {
      if (!judge_.native()) {
        spdlog::warn("the best candidate could not be exported for KernelBench: {}", e.what());
      }
    }
  }
  run_.write_json("run.json", result);
  if (auto row = kb_.run(run_id_)) {
    row->status = status;
    row->finished_at = utc_now();
    if (best_) row->best_speedup = best_->speedup;
    kb_.update_run(*row);
  }
  progress_({"end", result});
  return result;
}

void check_options(const OptimizeOptions& o) {
  if (o.backend != "cuda" && o.backend != "opencl" && o.backend != "rvv") {
    throw input_error("unknown backend " + o.backend, "use --backend cuda, opencl or rvv");
  }
  if (o.backend == "cuda" && o.device != "cpu" && o.device != "cuda" &&
      o.device.rfind("cuda:", 0) != 0) {
    throw input_error("--device " + o.device + " is not a CUDA device",
                      "use cuda, cuda:N or cpu with --backend cuda");
  }
  if (o.iterations < 1 || o.steps < 1) throw input_error("--iterations and --steps must be >= 1");
  if (!fs::is_regular_file(o.problem)) {
    throw input_error("no such problem file: " + o.problem.string(), "check the path");
  }
}

fs::path default_run_dir(const OptimizeOptions& o) {
  const std::string stamp = utc_now();  // 2026-11-29T16:09:51.123Z
  std::string compact;
  for (char c : stamp.substr(0, 19)) {
    if (c != '-' && c != ':') compact.push_back(c == 'T' ? '-' : c);
  }
  return fs::path("mblast-runs") / (fs::path(o.problem).stem().string() + "-" + compact);
}

}  // namespace

void request_optimize_stop() { g_stop_requested = true; }

nlohmann::json optimize(OptimizeOptions options, const ProgressFn& progress) {
  if (options.backend != "cuda" && options.device == "cuda") options.device = "";  // native: auto
  check_options(options);
  options.problem = fs::absolute(options.problem);
  if (options.out.empty()) options.out = default_run_dir(options);
  if (options.kb.empty()) options.kb = default_kb_path();
  options.kb = fs::absolute(options.kb);
  RunDir run = RunDir::create(options.out);
  options.out = run.path();
  nlohmann::json config = {{"options", options_to_json(options)},
                           {"mblast_version", MBLAST_VERSION},
                           {"created_at", utc_now()}};
  run.write_config(config);
  return Loop(options, std::move(run), progress).run();
}

nlohmann::json resume_optimize(const fs::path& run_dir, const nlohmann::json& overrides,
                               const ProgressFn& progress) {
  RunDir run = RunDir::open(run_dir);
  nlohmann::json config = run.config();
  nlohmann::json recorded = config.value("options", nlohmann::json::object());
  for (const auto& [key, value] : overrides.items()) recorded[key] = value;
  OptimizeOptions options = options_from_json(recorded);
  check_options(options);
  config["options"] = options_to_json(options);
  run.write_config(config);
  return Loop(options, std::move(run), progress).run();
}

}  // namespace mblast
