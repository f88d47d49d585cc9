// Provider specs ("openai:gpt-4o") to clients.
#include "llm/common.hpp"

namespace mblast {

namespace {

constexpr const char* kProviders =
    "openai:MODEL, anthropic:MODEL, command:CMD, replay:FILE, or none";

std::unique_ptr<LlmClient> make_plain_client(const std::string& spec, const LlmSettings& settings) {
  if (spec == "none" || spec.empty()) {
    throw input_error(
        "no LLM is configured (provider \"none\"): only built-in techniques can run",
        "choose one with --llm, $MBLAST_LLM or the config file: " + std::string(kProviders) +
            "; or export OPENAI_API_KEY or ANTHROPIC_API_KEY");
  }
  const std::size_t colon = spec.find(':');
  const std::string provider = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const bool known = provider == "openai" || provider == "anthropic" || provider == "command" ||
                     provider == "replay";
  if (!known) {
    throw input_error("unknown LLM provider \"" + provider + "\" in \"" + spec + "\"",
                      std::string("use ") + kProviders);
  }
  if (rest.empty()) {
    const char* what = provider == "command"  ? "a command"
                       : provider == "replay" ? "a file"
                                              : "a model";
    throw input_error("\"" + spec + "\" needs " + what + " after the colon",
                      std::string("use ") + kProviders);
  }
  if (provider == "openai") return llm_detail::make_openai_client(rest, settings);
  if (provider == "anthropic") return llm_detail::make_anthropic_client(rest, settings);
  if (provider == "command") return llm_detail::make_command_client(rest, settings);
  return llm_detail::make_replay_client(rest);
}

}  // namespace

std::unique_ptr<LlmClient> make_llm_client(const std::string& spec, const LlmSettings& settings) {
  auto client = make_plain_client(spec, settings);
  if (!settings.record_path.empty()) {
    return make_recording_client(std::move(client), settings.record_path);
  }
  return client;
}

std::unique_ptr<LlmClient> client_for_role(const std::string& role, const LlmSettings& settings) {
  return make_llm_client(spec_for_role(role, settings), settings);
}

}  // namespace mblast
