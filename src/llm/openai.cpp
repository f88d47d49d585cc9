// OpenAI-compatible chat completions: OpenAI, vLLM, NIM, Ollama, llama.cpp server, LiteLLM.
#include <spdlog/spdlog.h>

#include <atomic>
#include <stdexcept>

#include "llm/common.hpp"
#include "llm/http.hpp"

namespace mblast::llm_detail {

namespace {

constexpr const char* kDefaultBase = "https://api.openai.com/v1";

std::string strip_trailing_slashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

class OpenAiClient final : public HttpLlmClient {
 public:
  OpenAiClient(const std::string& model, const std::string& base, KeySource key,
               const LlmSettings& settings)
      : HttpLlmClient("openai", model, base + "/chat/completions", std::move(key), settings),
        // OpenAI itself takes max_completion_tokens for every model and requires it for
        // reasoning models; compatible servers know max_tokens.
        completion_tokens_field_(base == kDefaultBase) {}

 protected:
  HttpPost build(const LlmRequest& request) const override {
    nlohmann::json messages = nlohmann::json::array();
    for (const LlmMessage& message : request.messages) {
      messages.push_back({{"role", message.role}, {"content", message.content}});
    }
    nlohmann::json body = {{"model", model()}, {"messages", messages}};
    body[completion_tokens_field_ ? "max_completion_tokens" : "max_tokens"] = request.max_tokens;
    if (send_temperature_) body["temperature"] = request.temperature;
    if (request.seed) body["seed"] = *request.seed;

    HttpPost post{url(), {"Content-Type: application/json"}, body.dump()};
    if (!key().key.empty()) post.headers.push_back("Authorization: Bearer " + key().key);
    return post;
  }

  LlmResponse parse(const nlohmann::json& body) const override {
    const auto& choices = body.value("choices", nlohmann::json::array());
    if (!choices.is_array() || choices.empty() || !choices[0].is_object()) {
      throw std::runtime_error("no choices");
    }
    const nlohmann::json& choice = choices[0];
    const nlohmann::json message = choice.value("message", nlohmann::json::object());
    if (!message.is_object()) throw std::runtime_error("choices[0].message is not an object");
    LlmResponse response;
    const nlohmann::json content = message.value("content", nlohmann::json());
    if (content.is_string()) {
      response.text = content.get<std::string>();
    } else if (!content.is_null()) {
      throw std::runtime_error("choices[0].message.content is not text");
    }
    const nlohmann::json finish = choice.value("finish_reason", nlohmann::json());
    response.finish_reason = finish.is_string() ? finish.get<std::string>() : "";
    const nlohmann::json usage = body.value("usage", nlohmann::json());
    if (usage.is_object() && usage.value("prompt_tokens", nlohmann::json()).is_number()) {
      response.input_tokens = usage["prompt_tokens"].get<std::int64_t>();
      response.output_tokens = usage.value("completion_tokens", std::int64_t{0});
    } else {
      response.output_tokens = estimate_tokens(response.text.size());
      response.tokens_estimated = true;
    }
    return response;
  }

  // Newer OpenAI models reject a non-default temperature or max_tokens (HTTP 400 with "param").
  bool adapt_to(const nlohmann::json& error_body) override {
    if (!error_body.is_object() || !error_body.contains("error")) return false;
    const nlohmann::json& error = error_body["error"];
    if (!error.is_object()) return false;
    const auto text = [&error](const char* field) {
      const nlohmann::json value = error.value(field, nlohmann::json());
      return value.is_string() ? value.get<std::string>() : std::string();
    };
    const std::string code = text("code");
    if (code != "unsupported_parameter" && code != "unsupported_value") return false;
    const std::string param = text("param");
    if (param == "temperature" && send_temperature_) {
      send_temperature_ = false;
    } else if (param == "max_tokens" || param == "max_completion_tokens") {
      completion_tokens_field_ = param == "max_tokens";
    } else {
      return false;
    }
    spdlog::info("LLM {}: the model rejects '{}'; retrying with the request adjusted", name(),
                 param);
    return true;
  }

 private:
  std::atomic<bool> completion_tokens_field_;
  std::atomic<bool> send_temperature_{true};
};

}  // namespace

std::unique_ptr<LlmClient> make_openai_client(const std::string& model,
                                              const LlmSettings& settings) {
  std::string base = env_or_empty("OPENAI_BASE_URL");
  base = strip_trailing_slashes(base.empty() ? kDefaultBase : base);
  KeySource key{env_or_empty("OPENAI_API_KEY"), "OPENAI_API_KEY", "OPENAI_BASE_URL"};
  if (key.key.empty() && base == kDefaultBase) {
    throw llm_input_error("openai:" + model + " needs OPENAI_API_KEY, which is not set",
                          "export OPENAI_API_KEY=..., or set OPENAI_BASE_URL to an "
                          "OpenAI-compatible server (vLLM, Ollama, ...) that needs no key");
  }
  return std::make_unique<OpenAiClient>(model, base, std::move(key), settings);
}

}  // namespace mblast::llm_detail
