// The end of a run (docs/ARCHITECTURE.md §1): LLM usage, the compile baseline, the summary and
// its best.
#include "core/loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/loop_detail.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;
using namespace optimize_detail;
using namespace loop_detail;

// LLM usage of the whole run: this process's ledger plus what the run spent before a resume.
Loop::Usage Loop::usage() const {
  LlmLedger::Totals now;
  if (agents_.ledger) now = agents_.ledger->total();
  Usage u;
  u.input_tokens = now.input_tokens;
  u.output_tokens = now.output_tokens;
  u.tokens = now.input_tokens + now.output_tokens + resumed_.tokens;
  if (now.cost_usd) u.cost_usd = *now.cost_usd + resumed_.cost_usd;
  u.report = agents_.ledger ? agents_.ledger->to_json() : nlohmann::json::object();
  u.report["tokens"] = u.tokens;
  u.report["cost_usd"] = optional_json(u.cost_usd);
  return u;
}

// torch.compile of the reference, the second baseline of reports, as the compile built-in's
// step on the reference measured it (against eager in the same evaluation, scaled to the run's
// eager time).
void Loop::take_compile_baseline(const TechniqueRow& technique, bool on_reference,
                                 const EvalResult& result) {
  const auto& compile = backend_.traits().compile_transform;
  if (compile.empty() || baseline_.compile_ms || !on_reference || !result.correct ||
      technique.implementer != "builtin" || !technique.builtin ||
      technique.builtin->transform != compile)
    return;
  set_compile_baseline(result.cand_ms, result.ref_ms);
}

// compiled_ms against eager_ms, both of one interleaved evaluation, scaled to the run's eager time.
void Loop::set_compile_baseline(std::optional<double> compiled_ms, std::optional<double> eager_ms) {
  if (compiled_ms && eager_ms && *eager_ms > 0 && baseline_.ref_ms) {
    baseline_.compile_ms = *baseline_.ref_ms * (*compiled_ms / *eager_ms);
  }
}

// A run that ended with its steps (no budget, no signal) and no compile step on the reference
// judges the reference once more with torch.compile timed beside it.
void Loop::judge_compile_baseline() {
  // torch.compile exists from PyTorch 2.0 (Debian 12's is 1.13).
  const bool has_compile = std::atoi(baseline_.torch_version.c_str()) >= 2;
  if (backend_.traits().compile_transform.empty() || baseline_.compile_ms || !baseline_.ref_ms ||
      !has_compile)
    return;
  try {
    const auto reference = backend_.builtin("reference", options_.problem, true, {});
    const Evaluation judged =
        write_and_judge("compile_baseline", reference.source.value_or(""), 0, true);
    set_compile_baseline(judged.result.compile_ms, judged.result.ref_ms);
  } catch (const TimeLimitReached&) {
  }
}

RunSummary Loop::finish(const std::string& status, const std::string& reason) {
  if (status == "finished" || status == "exhausted") judge_compile_baseline();
  backend_.stop_prestarting();
  backend_.stop_prebuilding();
  const Usage u = usage();
  RunSummary r;
  r.status = status;
  r.stop_reason = reason;
  r.task = task_;
  r.problem = fs::absolute(options_.problem);
  r.backend = options_.judge.backend;
  r.device = options_.judge.device;
  r.hardware = hardware_;
  r.llm = agents_.description;
  r.run_dir = run_.path();
  r.run_id = run_id_;
  r.kb = kb_.path();
  r.steps = steps_done_;
  r.evaluations = evaluations_total();
  r.correct_candidates = correct_candidates_;
  r.baseline_ms = baseline_.ref_ms;
  r.baseline_cost = baseline_.ref_cost;
  if (!baseline_.speedup_baseline.empty()) r.speedup_baseline = baseline_.speedup_baseline;
  r.baselines = baseline_figures(baseline_);
  r.compile_ms = baseline_.compile_ms;
  r.eager_range = EagerRange::over(run_eager_ms());
  r.tokens = u.tokens;
  r.cost_usd = u.cost_usd;
  r.llm_usage = u.report;
  r.tolerance = baseline_.tolerance;
  r.sol_ms = extra_number(baseline_, "sol_ms");
  r.seconds = run_seconds();
  r.baseline_extra = baseline_extras();
  if (best_) record_best(r);
  const nlohmann::json result = r.to_json();
  run_.write_json("run.json", result);
  if (auto row = kb_.run(run_id_)) {
    row->status = status;
    row->finished_at = utc_now();
    if (best_) row->best_speedup = best_->speedup;
    kb_.update_run(*row);
  }
  progress_({.kind = "end", .data = result, .summary = r});
  return r;
}

// The best candidate's figures, its copy in the run directory and its export for the harness.
void Loop::record_best(RunSummary& r) const {
  r.best_speedup = best_->speedup;
  r.best_technique = best_->technique_id;
  r.best_ms = best_->time_ms;
  r.best_eager_ms = best_->baseline_ms;
  r.sol_score = best_->sol_score;
  if (best_->time_ms && baseline_.compile_ms && *best_->time_ms > 0 &&
      baseline_.ref_ms.value_or(0) > 0) {
    // Both times come from their own interleaved runs against eager: compare them through it.
    r.speedup_vs_compile = best_->speedup * (*baseline_.compile_ms / *baseline_.ref_ms);
  }
  const std::string best_name = "best" + backend_.traits().candidate_extension;
  run_.write_text(best_name, read_input_file(best_->file, "candidate"));
  r.best_file = run_.path() / best_name;
  try {
    if (backend_.export_for_harness(best_->file, run_.path() / "best_kernelbench.py")) {
      r.kernelbench_file = run_.path() / "best_kernelbench.py";
    }
  } catch (const Error& e) {
    spdlog::warn("the best candidate could not be exported for KernelBench: {}", e.what());
  }
}

}  // namespace mblast
