// The actor and fix agents: one LLM call, then the candidate's files from the answer.
#include "mblast/agents.hpp"
#include "agents/format.hpp"
#include "agents/request.hpp"
#include "mblast/error.hpp"

namespace mblast {

namespace {

AgentResult complete_candidate(LlmClient& client, const std::string& role,
                               std::vector<LlmMessage> messages, const AgentSampling& sampling,
                               const AgentFormat& spec) {
  AgentResult result;
  result.response = client.complete(agents::request_for(role, std::move(messages), sampling));
  for (const auto& output : spec.outputs) {
    result.files.push_back(pick_code_block(result.response, output.file, output.language));
    result.files.back().file = output.file;
  }
  result.candidate_source = result.files.front().code + "\n";
  return result;
}

// A format with no files comes from a context the caller did not fill from its backend.
const AgentFormat& checked_format(const AgentFormat& format) {
  if (format.outputs.empty()) {
    throw input_error("no candidate format for this backend",
                      "set the context's format from the backend's traits (mblast/backend.hpp)");
  }
  return format;
}

}  // namespace

AgentResult run_actor(LlmClient& client, const ActorContext& context) {
  return complete_candidate(client, "actor", render_actor(context), context.sampling,
                            checked_format(context.format));
}

AgentResult run_fix(LlmClient& client, const FixContext& context) {
  return complete_candidate(client, "fix", render_fix(context), context.sampling,
                            checked_format(context.format));
}

}  // namespace mblast
