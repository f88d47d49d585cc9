#pragma once
// The LLM layer: one client interface over OpenAI-compatible endpoints, Anthropic's Messages API,
// an external command and recorded cassettes; settings, accounting and budgets
// (docs/ARCHITECTURE.md §3). API keys come from the environment, stay in memory and never reach
// logs, errors or files.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/error.hpp"

namespace mblast {

struct LlmMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

struct LlmRequest {
  std::string role_tag = "actor";  // actor | fix | critic | state | ping: accounting, model choice
  std::vector<LlmMessage> messages;
  int max_tokens = 4096;
  double temperature = 0.2;
  std::optional<std::uint64_t> seed;  // sent where the provider supports it
};

struct LlmResponse {
  std::string text;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  bool tokens_estimated = false;  // bytes / 4, where the provider reports no usage
  std::string finish_reason;      // "stop", "length", "content_filter", ... (normalized)
  bool truncated = false;         // cut off by the length limit; the caller decides what to do
  double latency_s = 0;           // wall time of complete(), retries and waits included
  int attempts = 1;
  std::string provider;  // "openai", "anthropic", "command"; replay gives the recorded one
  std::string model;     // as requested
};

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  // Throws mblast::Error: input_error for configuration problems (bad key, unknown model),
  // job_error for a request that failed after retries.
  virtual LlmResponse complete(const LlmRequest& request) = 0;
  virtual std::string name() const = 0;  // "openai:gpt-4o"
};

struct Price {
  double input_per_mtok = 0;   // USD per million input tokens
  double output_per_mtok = 0;  // USD per million output tokens
};

struct LlmSettings {
  std::string default_spec = "none";            // "openai:gpt-4o", "none", ...
  std::map<std::string, std::string> per_role;  // role -> spec
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{600'000};  // per attempt
  int max_retries = 5;
  std::chrono::milliseconds backoff_base{1'000};
  std::chrono::milliseconds backoff_max{60'000};
  std::size_t max_response_bytes = 8 << 20;
  std::string record_path;              // --llm-record FILE: every exchange is appended there
  std::map<std::string, Price> prices;  // spec -> price; user-provided, none built in
  std::uint64_t jitter_seed = 0;        // 0: random; otherwise retry delays are reproducible
};

// Precedence for the default provider: `cli_spec` (--llm), then $MBLAST_LLM, then the config
// file's [llm] default, then the first of $OPENAI_API_KEY ("openai:gpt-4o") and
// $ANTHROPIC_API_KEY ("anthropic:claude-sonnet-4-5"), else "none". An explicit --llm or
// $MBLAST_LLM applies to every role; per-role models come from the config file otherwise.
// The config file defaults to $XDG_CONFIG_HOME/mblast/config.toml (~/.config/mblast/...):
//   [llm]  default, actor, fix, critic, state = "PROVIDER:MODEL"
//          connect_timeout_s, timeout_s, max_retries, max_response_mb
//   [prices."openai:gpt-4o"]  input_per_mtok = 2.5  output_per_mtok = 10
// $MBLAST_LLM_BACKOFF_MS overrides the first retry delay (tests use it to keep waits short).
LlmSettings load_llm_settings(const std::optional<std::filesystem::path>& config_file,
                              const std::string& cli_spec);

// The spec a role uses: per_role[role], else default_spec.
std::string spec_for_role(const std::string& role, const LlmSettings& settings);

// "openai:MODEL", "anthropic:MODEL", "command:CMD", "replay:FILE"; "none" and unknown providers
// throw input_error. With settings.record_path set, the client records every exchange there.
std::unique_ptr<LlmClient> make_llm_client(const std::string& spec, const LlmSettings& settings);
std::unique_ptr<LlmClient> client_for_role(const std::string& role, const LlmSettings& settings);

// --max-cost needs a price for every spec in use (replay specs are priced per response).
void require_prices_for_cost_budget(const LlmSettings& settings);

// Replaces the value of every secret-looking environment variable (is_secret_env_name: *_API_KEY,
// *_TOKEN, ...) found in `text` with "***". Applied to every log line and error this layer emits.
std::string redact_secrets(std::string text);

// Cassettes (JSON Lines): {"key", "request", "response", "note": "recorded"|"authored"} per line.
// The key is the SHA-256 of the canonical request (role_tag, messages, max_tokens, temperature,
// seed), independent of the provider.
nlohmann::json canonical_request(const LlmRequest& request);
std::string cassette_key(const LlmRequest& request);

// Wraps `inner` and appends each successful exchange to `cassette` (created 0600, one flushed line
// per exchange).
std::unique_ptr<LlmClient> make_recording_client(std::unique_ptr<LlmClient> inner,
                                                 const std::filesystem::path& cassette);

// Thrown by BudgetClient once the budget is spent; exit code 1, so a run stops cleanly.
class LlmBudgetExhausted : public Error {
 public:
  explicit LlmBudgetExhausted(const std::string& reason);
};

// Tokens and cost per role and in total. Thread-safe.
class LlmLedger {
 public:
  struct Totals {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::int64_t calls = 0;
    bool tokens_estimated = false;
    std::optional<double> cost_usd = 0.0;  // nullopt once any call had no price
  };

  explicit LlmLedger(std::map<std::string, Price> prices = {});

  void add(const std::string& role, const LlmResponse& response);
  Totals total() const;
  std::map<std::string, Totals> by_role() const;

  // max_tokens counts input plus output tokens.
  void set_budget(std::optional<std::int64_t> max_tokens, std::optional<double> max_cost);
  bool exhausted() const;
  std::string exhausted_reason() const;  // empty while not exhausted

  // {"calls", "input_tokens", "output_tokens", "tokens_estimated", "cost_usd" (null: unknown),
  //  "by_role": {role: {...}}, "budget": {"max_tokens", "max_cost_usd"}, "exhausted",
  //  "exhausted_reason"}
  nlohmann::json to_json() const;

 private:
  std::string reason_locked() const;

  mutable std::mutex mutex_;
  std::map<std::string, Price> prices_;
  Totals total_;
  std::map<std::string, Totals> by_role_;
  std::optional<std::int64_t> max_tokens_;
  std::optional<double> max_cost_;
};

// Records every response in the ledger and refuses calls (LlmBudgetExhausted) once it is spent.
class BudgetClient : public LlmClient {
 public:
  BudgetClient(std::unique_ptr<LlmClient> inner, std::shared_ptr<LlmLedger> ledger);
  LlmResponse complete(const LlmRequest& request) override;
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<LlmClient> inner_;
  std::shared_ptr<LlmLedger> ledger_;
};

}  // namespace mblast
