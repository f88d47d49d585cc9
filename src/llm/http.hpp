#pragma once
// HTTP for the LLM providers: one libcurl POST, the retry delay, and the retrying client that
// the OpenAI and Anthropic wire formats plug into.
#include <atomic>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/llm.hpp"

namespace mblast::llm_detail {

struct HttpPost {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; they may carry a key, so never log them
  std::string body;
};

struct HttpReply {
  long status = 0;
  std::string body;
  std::optional<std::chrono::milliseconds> retry_after;
};

// No HTTP status came back: connection, timeout, TLS, or a body over the size cap.
struct TransportFailure {
  bool retryable = false;
  std::string message;
};

std::variant<HttpReply, TransportFailure> http_post(const HttpPost& post,
                                                    const LlmSettings& settings);

// Exponential backoff with full jitter; Retry-After, when given, wins (capped by backoff_max).
class Backoff {
 public:
  explicit Backoff(const LlmSettings& settings);
  std::chrono::milliseconds delay(int retry, std::optional<std::chrono::milliseconds> retry_after);

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds max_;
  std::mt19937_64 random_;
};

// The API's own error text from an error body (OpenAI, Anthropic, vLLM, ...), else a snippet.
std::string api_error_message(const std::string& body);

// What a provider needs to say about its key in messages.
struct KeySource {
  std::string key;       // empty: no key (a local server)
  std::string key_env;   // "OPENAI_API_KEY"
  std::string base_env;  // "OPENAI_BASE_URL"
};

// The retry loop and error mapping shared by the HTTP providers.
class HttpLlmClient : public LlmClient {
 public:
  LlmResponse complete(const LlmRequest& request) final;
  std::string name() const final { return provider_ + ":" + model_; }

 protected:
  HttpLlmClient(std::string provider, std::string model, std::string url, KeySource key,
                const LlmSettings& settings);

  virtual HttpPost build(const LlmRequest& request) const = 0;
  // Throws std::runtime_error when the body lacks what an answer must have.
  virtual LlmResponse parse(const nlohmann::json& body) const = 0;
  // A 400 that a changed request can avoid (a model rejecting a parameter): adjust, return true.
  virtual bool adapt_to(const nlohmann::json& /*error_body*/) { return false; }

  const std::string& model() const { return model_; }
  const std::string& url() const { return url_; }
  const KeySource& key() const { return key_; }

 private:
  std::optional<LlmResponse> parse_answer(const HttpReply& reply, std::string& problem) const;
  // 401/403/404 and other non-retryable statuses: the matching error, with the API's message.
  [[noreturn]] void throw_for_status(const HttpReply& reply) const;

  std::string provider_;
  std::string model_;
  std::string url_;
  KeySource key_;
  LlmSettings settings_;
};

}  // namespace mblast::llm_detail
