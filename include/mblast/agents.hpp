#pragma once
// The loop's LLM agents (docs/ARCHITECTURE.md §1): the actor writes a candidate, the fix agent
// repairs one, the critic turns a rollout into knowledge-base edits, the state summary assists the
// numeric classifier. Templates live in prompts/, are compiled in, and can be overridden file by
// file from $MBLAST_PROMPTS_DIR. The contexts are plain data that the loop fills from the KB and
// from measurements; rendering is deterministic so that prompts have golden tests.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/agent_format.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/llm.hpp"
#include "mblast/outcome.hpp"

namespace mblast {

// Tolerances and precision permissions of the task (docs/ARCHITECTURE.md §3).
struct PrecisionPolicy {
  double atol = 1e-4;
  double rtol = 1e-4;
  bool allow_tf32 = false;
  bool allow_bf16 = false;  // bf16 / fp16 arithmetic
};

// One condition of the classified state as measured: `value` satisfied `op threshold`.
struct StateEvidence {
  std::string metric;  // e.g. "launch_overhead_fraction"
  std::string op;      // "<", "<=", ">", ">=", "=="
  double threshold = 0;
  double value = 0;
};

// Sampling for one agent call.
struct AgentSampling {
  int max_tokens = 8192;
  double temperature = 0.2;
  std::optional<std::uint64_t> seed;
};

// What a step starts from: the reference itself, or the best verified candidate so far.
struct CurrentImplementation {
  bool is_reference = true;
  std::string source;  // unused when is_reference (the problem source is shown instead)
  std::optional<double> time_ms;
  std::optional<double> baseline_ms;  // the eager reference
  std::optional<double> speedup;      // baseline_ms / time_ms
};

struct ActorContext {
  std::string task;              // shown to the model, e.g. "level2/19_ConvTranspose2d_GELU"
  std::string problem_source;    // the KernelBench problem file
  std::string backend = "cuda";  // cuda | opencl | rvv
  std::string device = "cuda";   // "cpu" with backend cuda: plain PyTorch candidates
  AgentFormat format;            // how to write the candidate: the backend's (BackendTraits)
  std::string hardware;          // e.g. "NVIDIA H200"
  std::string slot = "model";    // the operator or region chosen by the operator selector
  std::string slot_detail;       // what that slot covers, when it is not the whole model
  std::string slot_code;         // a region slot's ops as Python (torch.fx), else empty
  CurrentImplementation current;
  StateRow state;
  std::vector<StateEvidence> evidence;
  TechniqueRow technique;
  std::vector<ClaimRow> claims;            // the KB's claims about the technique
  std::vector<ImplementationRow> similar;  // verified implementations of similar tasks
  std::vector<AttemptRow> past_attempts;   // this task's, newest first
  std::vector<std::string> heavy_ops;      // reference ops the optimized part must not call
  PrecisionPolicy precision;
  AgentSampling sampling;
};

// Why a candidate failed, as the build and the verifier reported it.
struct FailureReport {
  Outcome outcome = Outcome::incorrect;
  std::string error;  // compiler log, traceback or verifier message; trimmed when rendered
  std::optional<double> max_abs_err;
  std::optional<double> max_rel_err;
  std::string location;            // where the worst mismatch is, e.g. "output 0 at (3, 17)"
  std::vector<std::string> flags;  // suspicious behaviours the verifier found
};

// An earlier repair of the same candidate that failed too.
struct FixAttempt {
  Outcome outcome = Outcome::incorrect;
  std::string error;
};

struct FixContext {
  std::string task;
  std::string problem_source;
  std::string backend = "cuda";
  std::string device = "cuda";
  AgentFormat format;
  std::string hardware;
  std::optional<TechniqueRow> technique;     // what the failing candidate tried to apply
  std::string slot, slot_detail, slot_code;  // as the actor had them (ActorContext)
  std::string candidate_source;
  FailureReport failure;
  std::vector<FixAttempt> earlier;  // oldest first
  std::vector<std::string> heavy_ops;
  PrecisionPolicy precision;
  AgentSampling sampling{8192, 0.1, std::nullopt};
};

struct MetricDelta {
  std::string metric;
  double before = 0;
  double after = 0;
};

struct TrajectoryStep {
  std::optional<std::int64_t> step;
  std::string attempt_id;  // may be empty
  std::string state_id;
  std::string technique_id;
  Outcome outcome = Outcome::incorrect;
  std::optional<double> time_before_ms;  // best time before this step
  std::optional<double> time_after_ms;   // this candidate's time
  std::optional<double> speedup;         // over the eager reference
  std::string error;                     // trimmed when rendered
  std::vector<MetricDelta> profile_deltas;
  // The best's speedup over eager before this step. The gain of a step is speedup /
  // speedup_before: each over the eager time measured beside it, never two runs' times mixed.
  std::optional<double> speedup_before;
};

// speedup / speedup_before for a step with both; its speedup when nothing came before.
std::optional<double> step_gain(const TrajectoryStep& step);

struct CriticContext {
  std::string task;
  std::string backend = "cuda";
  std::string hardware;
  std::vector<TrajectoryStep> trajectory;  // the rollout so far; the last step is being judged
  std::vector<StateRow> states;            // the KB entries involved
  std::vector<TechniqueRow> techniques;
  std::vector<ClaimRow> claims;
  AgentSampling sampling{2048, 0.0, std::nullopt};
};

struct StateSummaryContext {
  std::string task;
  std::string problem_source;
  std::string backend = "cuda";
  std::string hardware;
  nlohmann::json signature = nlohmann::json::object();  // the profile signature's numbers
  std::vector<StateRow> states;                         // the states the answer may name
  std::string classifier_state_id;                      // the numeric classifier's pick
  std::vector<StateEvidence> classifier_evidence;
  AgentSampling sampling{512, 0.0, std::nullopt};
};

// ---- Prompts ----

// The template prompts/NAME.md: from $MBLAST_PROMPTS_DIR when that folder has the file, else
// the compiled-in copy. Throws input_error for an unknown name or an unreadable override.
std::string load_prompt(std::string_view name);

// A system message followed by the user message.
std::vector<LlmMessage> render_actor(const ActorContext& context);
std::vector<LlmMessage> render_fix(const FixContext& context);
std::vector<LlmMessage> render_critic(const CriticContext& context);
std::vector<LlmMessage> render_state_summary(const StateSummaryContext& context);

// A compiler log, traceback or verifier report cut to what a model needs: the first errors with
// their locations and source context, the final exception of a traceback; repeated warnings,
// template instantiation backtraces and nvcc's remarks dropped; at most max_chars.
std::string trim_error(const std::string& error_text, std::size_t max_chars = 4000);

// ---- Responses ----

struct CodeBlock {
  std::string language;  // the fence's first word, lower-cased; empty when there is none
  std::string file;      // from file=NAME (also filename= or path=); empty when absent
  std::string code;
  bool closed = true;  // false when the answer ended inside the block
};

// Fenced blocks (``` or ~~~, three or more) in order of appearance.
std::vector<CodeBlock> extract_code_blocks(std::string_view text);

// An answer with nothing usable in it. truncated(): it was cut off by the length limit.
class ResponseError : public Error {
 public:
  ResponseError(const std::string& what, bool truncated)
      : Error(ExitCode::job_failed, what,
              truncated ? "raise the agent's max_tokens or ask for a shorter answer" : ""),
        truncated_(truncated) {}
  bool truncated() const noexcept { return truncated_; }

 private:
  bool truncated_;
};

// The block named `file`, else the last closed block in `language` (for python: the last one
// that defines ModelNew). Throws ResponseError when there is none or the answer was truncated.
CodeBlock pick_code_block(const LlmResponse& response, const std::string& file,
                          const std::string& language);

// The first balanced top-level JSON object in an answer (a ```json block first), tolerant of
// prose around it. Throws ResponseError when there is none or the answer was truncated.
nlohmann::json extract_json_object(const LlmResponse& response);

// ---- Agents ----

struct AgentResult {
  std::string candidate_source;  // the backend's main candidate file
  LlmResponse response;
  std::vector<CodeBlock> files;  // every file of the candidate, main first (OpenCL has two)
};

// One LLM call each; ResponseError when the answer has no usable candidate. Errors of the
// client itself (budgets, authentication) pass through.
AgentResult run_actor(LlmClient& client, const ActorContext& context);
AgentResult run_fix(LlmClient& client, const FixContext& context);

struct CriticOutcome {
  std::vector<nlohmann::json> accepted;       // edits applied to the KB, ids resolved
  std::vector<std::string> rejected_reasons;  // one per rejected edit or answer
  int llm_calls = 0;
};

// Asks for KB edits as JSON, validates them (one repair request when the answer is invalid),
// and applies the valid ones in one transaction; evidence is linked to attempt_id (may be
// empty). Rejections are logged with spdlog at warn level.
CriticOutcome run_critic(LlmClient& client, const CriticContext& context, KnowledgeBase& kb,
                         const std::string& attempt_id);

// run_critic in two halves, so that the LLM call stays outside the step's KB transaction:
// ask_critic asks and validates (writes nothing), apply_critic writes the valid edits.
struct CriticVerdict {
  std::vector<nlohmann::json> valid;  // validated edits, ready to apply
  std::vector<std::string> rejected_reasons;
  int llm_calls = 0;
};
CriticVerdict ask_critic(LlmClient& client, const CriticContext& context, const KnowledgeBase& kb);
CriticOutcome apply_critic(const CriticVerdict& verdict, KnowledgeBase& kb,
                           const std::string& attempt_id, const std::string& backend);

// The critic without an LLM: judges the last trajectory step from its measurements and records
// support or refute on the claim "T helps in S on B" for its (state, technique, backend).
CriticOutcome rule_based_critic(const CriticContext& context, KnowledgeBase& kb,
                                const std::string& attempt_id);

struct StateSummary {
  std::string state_id;
  std::string reason;
};

// The model's choice among context.states, or nullopt (logged) when no valid answer came after
// one repair request.
std::optional<StateSummary> run_state_summary(LlmClient& client,
                                              const StateSummaryContext& context);

}  // namespace mblast
