// `mblast llm ping`: one tiny request to the configured LLM, to check keys, URLs and models.
#include <cstdio>
#include <iostream>

#include "cli/app.hpp"
#include "mblast/error.hpp"
#include "mblast/llm.hpp"

namespace mblast::cli {

namespace {

constexpr const char* kConfigHelp = R"(
Provider: --llm, else $MBLAST_LLM, else [llm] default in the config file, else openai:gpt-4o when
$OPENAI_API_KEY is set, else anthropic:claude-sonnet-4-5 when $ANTHROPIC_API_KEY is set.
  openai:MODEL     any OpenAI-compatible endpoint: $OPENAI_API_KEY, $OPENAI_BASE_URL
                   (default https://api.openai.com/v1; a local server needs no key)
  anthropic:MODEL  Anthropic Messages API: $ANTHROPIC_API_KEY, $ANTHROPIC_BASE_URL
  command:CMD      runs sh -c CMD with the prompt on stdin; the answer is its stdout
  replay:FILE      answers from a cassette recorded with --llm-record FILE
Config file ($XDG_CONFIG_HOME/mblast/config.toml, else ~/.config/mblast/config.toml):
  [llm]
  default = "openai:gpt-4o"        # also actor, fix, critic, state: a model per role
  connect_timeout_s = 10
  timeout_s = 600                  # per attempt
  max_retries = 5                  # on HTTP 429, 5xx and connection errors
  max_response_mb = 8
  [prices."openai:gpt-4o"]         # USD per million tokens, for costs and --max-cost
  input_per_mtok = 2.5
  output_per_mtok = 10
$MBLAST_LLM_BACKOFF_MS sets the first retry delay (default 1000; tests use it).)";

struct PingCommand {
  std::string llm;
  std::string config;
  std::string record;
  bool json = false;
};

std::pair<std::string, std::string> split_spec(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos) return {spec, ""};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

std::string trimmed(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

void print_text(const LlmResponse& response) {
  char latency[32];
  std::snprintf(latency, sizeof latency, "%.3f s", response.latency_s);
  std::cout << "provider       " << response.provider << "\n"
            << "model          " << response.model << "\n"
            << "latency        " << latency << "\n"
            << "tokens         " << response.input_tokens << " in, " << response.output_tokens
            << " out" << (response.tokens_estimated ? " (estimated)" : "") << "\n"
            << "attempts       " << response.attempts << "\n"
            << "finish reason  " << response.finish_reason
            << (response.truncated ? " (truncated)" : "") << "\n"
            << "reply          " << trimmed(response.text) << "\n";
}

nlohmann::json ping_json(const LlmResponse& response) {
  return {{"ok", true},
          {"provider", response.provider},
          {"model", response.model},
          {"latency_s", response.latency_s},
          {"input_tokens", response.input_tokens},
          {"output_tokens", response.output_tokens},
          {"tokens_estimated", response.tokens_estimated},
          {"attempts", response.attempts},
          {"finish_reason", response.finish_reason},
          {"truncated", response.truncated},
          {"reply", response.text},
          {"error", nullptr}};
}

nlohmann::json failure_json(const std::string& spec, const Error& error) {
  const auto [provider, model] = split_spec(spec);
  const auto or_null = [](const std::string& text) {
    return text.empty() ? nlohmann::json() : nlohmann::json(text);
  };
  return {{"ok", false},           {"provider", or_null(provider)}, {"model", or_null(model)},
          {"latency_s", nullptr},  {"input_tokens", nullptr},       {"output_tokens", nullptr},
          {"attempts", nullptr},   {"finish_reason", nullptr},      {"reply", nullptr},
          {"error", error.what()}, {"fix", or_null(error.hint())}};
}

int ping(const PingCommand& command) {
  std::string spec = command.llm;
  try {
    std::optional<std::filesystem::path> config;
    if (!command.config.empty()) config = command.config;
    LlmSettings settings = load_llm_settings(config, command.llm);
    settings.record_path = command.record;
    spec = spec_for_role("ping", settings);
    auto client = make_llm_client(spec, settings);

    LlmRequest request;
    request.role_tag = "ping";
    request.messages = {{"system", "You are a health check."},
                        {"user", "Reply with the single word: pong"}};
    request.max_tokens = 16;
    request.temperature = 0;
    const LlmResponse response = client->complete(request);
    if (command.json) {
      std::cout << ping_json(response).dump(2) << "\n";
    } else {
      print_text(response);
    }
    return 0;
  } catch (const Error& e) {
    if (!command.json) throw;
    std::cout << failure_json(spec, e).dump(2) << "\n";
    return static_cast<int>(e.code());
  }
}

}  // namespace

void register_llm(CLI::App& app, Globals& /*globals*/, Action& action) {
  auto* llm = app.add_subcommand("llm", "Check the LLM provider that the agents use");
  llm->require_subcommand(1);
  auto command = std::make_shared<PingCommand>();
  auto* ping_cmd = llm->add_subcommand(
      "ping",
      "Send one tiny request to the LLM and print provider, model, latency, tokens, attempts and "
      "the reply, or the exact failure. Exit 0 on success, 2 for configuration or "
      "authentication problems, 1 when the request failed after retries");
  ping_cmd->footer(kConfigHelp);
  ping_cmd->add_option("--llm", command->llm, "PROVIDER:MODEL, command:CMD, replay:FILE or none");
  ping_cmd->add_option("--config", command->config, "Config file (TOML) instead of the default");
  ping_cmd->add_option("--llm-record", command->record, "Append the exchange to this cassette");
  ping_cmd->add_flag("--json", command->json, "Print JSON for scripts instead of text");
  ping_cmd->callback([&action, command] { action = [command] { return ping(*command); }; });
}

}  // namespace mblast::cli
