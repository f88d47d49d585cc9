#pragma once
// The LLM request every agent sends: its role, its rendered messages and its sampling settings.
#include <string>
#include <utility>
#include <vector>

#include "mblast/agents.hpp"
#include "mblast/llm.hpp"

namespace mblast::agents {

inline LlmRequest request_for(const std::string& role, std::vector<LlmMessage> messages,
                              const AgentSampling& sampling) {
  LlmRequest request;
  request.role_tag = role;
  request.messages = std::move(messages);
  request.max_tokens = sampling.max_tokens;
  request.temperature = sampling.temperature;
  request.seed = sampling.seed;
  return request;
}

}  // namespace mblast::agents
