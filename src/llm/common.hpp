#pragma once
// Helpers shared by the providers in src/llm/.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "mblast/error.hpp"
#include "mblast/llm.hpp"

namespace mblast::llm_detail {

// Errors with every secret value blanked out of the message and the hint.
Error llm_input_error(const std::string& what, const std::string& hint = {});
Error llm_job_error(const std::string& what, const std::string& hint = {});

// For providers that report no usage: about four bytes per token.
std::int64_t estimate_tokens(std::size_t bytes);

std::string env_or_empty(const char* name);

// `text` cut to `limit` bytes with "..." appended when it was longer.
std::string clip(const std::string& text, std::size_t limit);

std::unique_ptr<LlmClient> make_openai_client(const std::string& model,
                                              const LlmSettings& settings);
std::unique_ptr<LlmClient> make_anthropic_client(const std::string& model,
                                                 const LlmSettings& settings);
std::unique_ptr<LlmClient> make_command_client(const std::string& command,
                                               const LlmSettings& settings);
std::unique_ptr<LlmClient> make_replay_client(const std::filesystem::path& cassette);

}  // namespace mblast::llm_detail
