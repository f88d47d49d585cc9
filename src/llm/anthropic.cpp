// Anthropic's Messages API.
#include <algorithm>
#include <stdexcept>

#include "llm/common.hpp"
#include "llm/http.hpp"

namespace mblast::llm_detail {

namespace {

constexpr const char* kDefaultBase = "https://api.anthropic.com";

std::string normalize_stop_reason(const std::string& reason) {
  if (reason == "end_turn" || reason == "stop_sequence") return "stop";
  if (reason == "max_tokens") return "length";
  return reason;
}

class AnthropicClient final : public HttpLlmClient {
 public:
  AnthropicClient(const std::string& model, const std::string& base, KeySource key,
                  const LlmSettings& settings)
      : HttpLlmClient("anthropic", model, base + "/v1/messages", std::move(key), settings) {}

 protected:
  HttpPost build(const LlmRequest& request) const override {
    std::string system;
    nlohmann::json messages = nlohmann::json::array();
    for (const LlmMessage& message : request.messages) {
      if (message.role == "system") {
        system += (system.empty() ? "" : "\n\n") + message.content;
      } else {
        messages.push_back({{"role", message.role}, {"content", message.content}});
      }
    }
    nlohmann::json body = {{"model", model()},
                           {"max_tokens", request.max_tokens},
                           {"messages", messages},
                           // The API accepts 0..1 only.
                           {"temperature", std::clamp(request.temperature, 0.0, 1.0)}};
    if (!system.empty()) body["system"] = system;

    HttpPost post{
        url(), {"content-type: application/json", "anthropic-version: 2023-06-01"}, body.dump()};
    if (!key().key.empty()) post.headers.push_back("x-api-key: " + key().key);
    return post;
  }

  LlmResponse parse(const nlohmann::json& body) const override {
    const nlohmann::json content = body.value("content", nlohmann::json());
    if (!content.is_array()) throw std::runtime_error("no content array");
    LlmResponse response;
    for (const nlohmann::json& block : content) {
      if (block.is_object() && block.value("type", "") == "text") {
        response.text += block.value("text", "");
      }
    }
    const nlohmann::json stop = body.value("stop_reason", nlohmann::json());
    response.finish_reason = normalize_stop_reason(stop.is_string() ? stop.get<std::string>() : "");
    const nlohmann::json usage = body.value("usage", nlohmann::json());
    if (usage.is_object() && usage.value("input_tokens", nlohmann::json()).is_number()) {
      response.input_tokens = usage["input_tokens"].get<std::int64_t>();
      response.output_tokens = usage.value("output_tokens", std::int64_t{0});
    } else {
      response.output_tokens = estimate_tokens(response.text.size());
      response.tokens_estimated = true;
    }
    return response;
  }
};

}  // namespace

std::unique_ptr<LlmClient> make_anthropic_client(const std::string& model,
                                                 const LlmSettings& settings) {
  std::string base = env_or_empty("ANTHROPIC_BASE_URL");
  if (base.empty()) base = kDefaultBase;
  while (!base.empty() && base.back() == '/') base.pop_back();
  KeySource key{env_or_empty("ANTHROPIC_API_KEY"), "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"};
  if (key.key.empty() && base == kDefaultBase) {
    throw llm_input_error("anthropic:" + model + " needs ANTHROPIC_API_KEY, which is not set",
                          "export ANTHROPIC_API_KEY=..., or set ANTHROPIC_BASE_URL to a "
                          "compatible server that needs no key");
  }
  return std::make_unique<AnthropicClient>(model, base, std::move(key), settings);
}

}  // namespace mblast::llm_detail
