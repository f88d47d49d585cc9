// The actor and fix agents: one LLM call, then the candidate's files from the answer.
#include "mblast/agents.hpp"
#include "agents/format.hpp"
#include "agents/request.hpp"

namespace mblast {

namespace {

AgentResult complete_candidate(LlmClient& client, const std::string& role,
                               std::vector<LlmMessage> messages, const AgentSampling& sampling,
                               const agents::BackendSpec& spec) {
  AgentResult result;
  result.response = client.complete(agents::request_for(role, std::move(messages), sampling));
  for (const auto& output : spec.outputs) {
    result.files.push_back(pick_code_block(result.response, output.file, output.language));
    result.files.back().file = output.file;
  }
  result.candidate_source = result.files.front().code + "\n";
  return result;
}

}  // namespace

AgentResult run_actor(LlmClient& client, const ActorContext& context) {
  return complete_candidate(client, "actor", render_actor(context), context.sampling,
                            agents::backend_spec(context.backend, context.device));
}

AgentResult run_fix(LlmClient& client, const FixContext& context) {
  return complete_candidate(client, "fix", render_fix(context), context.sampling,
                            agents::backend_spec(context.backend, context.device));
}

}  // namespace mblast
