// The retry loop shared by the HTTP providers, and how each HTTP outcome maps to an error.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <thread>

#include "llm/common.hpp"
#include "llm/http.hpp"
#include "mblast/support.hpp"

namespace mblast::llm_detail {

namespace {

using Clock = std::chrono::steady_clock;

bool retryable_status(long status) { return status == 408 || status == 429 || status >= 500; }

std::string seconds_text(std::chrono::milliseconds delay) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(delay.count()) / 1000.0);
  return text;
}

}  // namespace

HttpLlmClient::HttpLlmClient(std::string provider, std::string model, std::string url,
                             KeySource key, const LlmSettings& settings)
    : provider_(std::move(provider)),
      model_(std::move(model)),
      url_(std::move(url)),
      key_(std::move(key)),
      settings_(settings) {}

std::optional<LlmResponse> HttpLlmClient::parse_answer(const HttpReply& reply,
                                                       std::string& problem) const {
  const nlohmann::json body = nlohmann::json::parse(reply.body, nullptr, false);
  if (body.is_discarded()) {
    problem = "the body is not JSON";
    return std::nullopt;
  }
  try {
    return parse(body);
  } catch (const std::exception& e) {
    problem = e.what();
    return std::nullopt;
  }
}

void HttpLlmClient::throw_for_status(const HttpReply& reply) const {
  const std::string who = "LLM " + name() + ": ";
  const std::string status = "HTTP " + std::to_string(reply.status);
  const std::string message = api_error_message(reply.body);
  if (reply.status == 401 || reply.status == 403) {
    throw llm_input_error(who + "authentication failed (" + status + "): check " + key_.key_env +
                              (key_.key.empty() ? " (it is not set)" : "") +
                              "; the API said: " + clip(message, 300),
                          "export a valid " + key_.key_env + " (and " + key_.base_env +
                              " when you use another server)");
  }
  if (reply.status == 404) {
    throw llm_input_error(who + status + " from " + url_ + ": " + clip(message, 300),
                          "check the model name and " + key_.base_env);
  }
  throw llm_job_error(who + status + ": " + clip(message, 500),
                      "the API rejected the request; see its message above");
}

LlmResponse HttpLlmClient::complete(const LlmRequest& request) {
  const auto start = Clock::now();
  const std::string who = "LLM " + name() + ": ";
  Backoff backoff(settings_);
  int attempts = 0;
  int retries = 0;
  bool malformed_retried = false;
  int adaptations = 0;
  for (;;) {
    ++attempts;
    const auto outcome = http_post(build(request), settings_);
    std::string failure;
    std::optional<std::chrono::milliseconds> retry_after;
    const auto* transport = std::get_if<TransportFailure>(&outcome);
    if (transport != nullptr) {
      if (!transport->retryable) {
        throw llm_job_error(who + transport->message + " (" + url_ + ")",
                            "check " + key_.base_env + " and the network");
      }
      failure = transport->message;
    } else if (const HttpReply& reply = std::get<HttpReply>(outcome);
               reply.status >= 200 && reply.status < 300) {
      std::string problem;
      if (std::optional<LlmResponse> response = parse_answer(reply, problem)) {
        response->attempts = attempts;
        response->latency_s = seconds_since(start);
        response->provider = provider_;
        response->model = model_;
        response->truncated = response->finish_reason == "length";
        return *response;
      }
      failure = "malformed answer (" + problem + ")";
      if (malformed_retried || retries >= settings_.max_retries) {
        throw llm_job_error(
            who + failure + ": " + clip(reply.body, 200),
            "check that " + key_.base_env + " points at a " + provider_ + "-compatible API");
      }
      malformed_retried = true;
    } else if (retryable_status(reply.status)) {
      failure = "HTTP " + std::to_string(reply.status);
      const std::string message = api_error_message(reply.body);
      if (!message.empty()) failure += " (" + clip(message, 200) + ")";
      retry_after = reply.retry_after;
    } else {
      if (adaptations < 2 && adapt_to(nlohmann::json::parse(reply.body, nullptr, false))) {
        ++adaptations;
        continue;
      }
      throw_for_status(reply);
    }

    if (retries >= settings_.max_retries) {
      throw llm_job_error(
          who + failure + "; gave up after " + std::to_string(attempts) + " attempts",
          (transport != nullptr ? "check " + key_.base_env + " and the network; " : "") +
              "try again later, or raise [llm] max_retries / timeout_s in the config file");
    }
    ++retries;
    const auto delay = backoff.delay(retries, retry_after);
    spdlog::warn(redact_secrets(who + failure + ", retry " + std::to_string(retries) + "/" +
                                std::to_string(settings_.max_retries) + " in " +
                                seconds_text(delay)));
    std::this_thread::sleep_for(delay);
  }
}

}  // namespace mblast::llm_detail
