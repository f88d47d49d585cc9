// The OpenAI and Anthropic providers through the real libcurl path, against a local server.
#include <gtest/gtest.h>

#include <ctime>
#include <functional>

#include "llm/http.hpp"
#include "llm_server.hpp"
#include "mblast/llm.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::error_of;
using testing::seconds_since;

using testing::fast_llm_settings;
using testing::hello_request;
using testing::LlmTestServer;
using testing::LogCapture;
using testing::ScopedEnv;
using testing::ScriptedReply;
using Clock = std::chrono::steady_clock;

constexpr const char* kOpenAiKey = "sk-test-openai-key-1";
constexpr const char* kAnthropicKey = "sk-ant-test-key-2";

// Points both providers at `server` with fake keys.
std::map<std::string, std::optional<std::string>> env_for(const LlmTestServer& server) {
  return {{"OPENAI_API_KEY", kOpenAiKey},
          {"OPENAI_BASE_URL", server.openai_base()},
          {"ANTHROPIC_API_KEY", kAnthropicKey},
          {"ANTHROPIC_BASE_URL", server.anthropic_base()}};
}

TEST(LlmOpenAi, SendsTheWireFormatAndParsesTheAnswer) {
  LlmTestServer server;
  server.expect_keys(kOpenAiKey, kAnthropicKey);
  ScopedEnv env(env_for(server));
  auto client = make_llm_client("openai:test-model", fast_llm_settings());
  EXPECT_EQ(client->name(), "openai:test-model");
  LlmRequest request = hello_request();
  request.seed = 7;
  const LlmResponse response = client->complete(request);

  EXPECT_EQ(response.text, "pong");
  EXPECT_EQ(response.input_tokens, 21);
  EXPECT_EQ(response.output_tokens, 1);
  EXPECT_FALSE(response.tokens_estimated);
  EXPECT_EQ(response.finish_reason, "stop");
  EXPECT_FALSE(response.truncated);
  EXPECT_EQ(response.attempts, 1);
  EXPECT_EQ(response.provider, "openai");
  EXPECT_EQ(response.model, "test-model");
  EXPECT_GT(response.latency_s, 0);

  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].header("authorization"), std::string("Bearer ") + kOpenAiKey);
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  const auto body = seen[0].json();
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["max_tokens"], 64);  // a compatible server: max_tokens, not max_completion_tokens
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.2);
  EXPECT_EQ(body["seed"], 7);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "Reply with the single word: pong");
}

TEST(LlmOpenAi, ALocalServerNeedsNoKeyAndGetsNoAuthorizationHeader) {
  LlmTestServer server;
  ScopedEnv env({{"OPENAI_API_KEY", std::nullopt}, {"OPENAI_BASE_URL", server.openai_base()}});
  const auto response =
      make_llm_client("openai:llama3:8b", fast_llm_settings())->complete(hello_request());
  EXPECT_EQ(response.text, "pong");
  EXPECT_EQ(response.model, "llama3:8b");
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].header("authorization"), "");
  EXPECT_EQ(server.requests()[0].json()["model"], "llama3:8b");
}

TEST(LlmOpenAi, AdaptsWhenTheModelRejectsTemperature) {
  LlmTestServer server;
  const nlohmann::json rejection = {
      {"error",
       {{"message", "Unsupported value: 'temperature' does not support 0.2 with this model."},
        {"type", "invalid_request_error"},
        {"param", "temperature"},
        {"code", "unsupported_value"}}}};
  server.script({{400, rejection.dump(), {}, {}}});
  ScopedEnv env(env_for(server));
  const auto response =
      make_llm_client("openai:o-test", fast_llm_settings())->complete(hello_request());
  EXPECT_EQ(response.text, "pong");
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0].json().contains("temperature"));
  EXPECT_FALSE(seen[1].json().contains("temperature"));
}

TEST(LlmAnthropic, SendsTheWireFormatAndParsesTheAnswer) {
  LlmTestServer server;
  server.expect_keys(kOpenAiKey, kAnthropicKey);
  ScopedEnv env(env_for(server));
  auto client = make_llm_client("anthropic:test-model", fast_llm_settings());
  EXPECT_EQ(client->name(), "anthropic:test-model");
  LlmRequest request = hello_request();
  request.messages.insert(request.messages.begin(), {"system", "Be brief."});
  const LlmResponse response = client->complete(request);

  EXPECT_EQ(response.text, "pong");
  EXPECT_EQ(response.input_tokens, 19);
  EXPECT_EQ(response.output_tokens, 2);
  EXPECT_EQ(response.finish_reason, "stop");
  EXPECT_EQ(response.provider, "anthropic");

  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/messages");
  EXPECT_EQ(seen[0].header("x-api-key"), kAnthropicKey);
  EXPECT_EQ(seen[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  EXPECT_EQ(seen[0].header("authorization"), "");
  const auto body = seen[0].json();
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_EQ(body["system"], "Be brief.\n\nYou are a health check.");
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
}

TEST(LlmProviders, MissingKeyWithTheDefaultBaseUrlIsAUsageError) {
  ScopedEnv env({{"OPENAI_API_KEY", std::nullopt},
                 {"OPENAI_BASE_URL", std::nullopt},
                 {"ANTHROPIC_API_KEY", std::nullopt},
                 {"ANTHROPIC_BASE_URL", std::nullopt}});
  for (const auto& [spec, variable] : {std::pair{"openai:gpt-4o", "OPENAI_API_KEY"},
                                       std::pair{"anthropic:claude-x", "ANTHROPIC_API_KEY"}}) {
    const Error e = error_of([spec = spec] { make_llm_client(spec, LlmSettings{}); });
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
  }
}

// The robustness cases, once per wire format.
struct WireFormat {
  std::string spec;
  std::string key_env;
  std::string base_env;
  std::function<ScriptedReply(const std::string&)> truncated_answer;
};

void PrintTo(const WireFormat& format, std::ostream* out) { *out << format.spec; }

class LlmRobustness : public ::testing::TestWithParam<WireFormat> {
 protected:
  LlmTestServer server_;
  ScopedEnv env_{env_for(server_)};
  LlmSettings settings_ = fast_llm_settings();

  std::unique_ptr<LlmClient> client() { return make_llm_client(GetParam().spec, settings_); }
};

TEST_P(LlmRobustness, RetriesOn429HonouringRetryAfter) {
  server_.script({testing::error_reply(429, "rate limited", "1"),
                  testing::error_reply(429, "rate limited", "1")});
  LogCapture log;
  const auto start = Clock::now();
  const auto response = client()->complete(hello_request());
  EXPECT_EQ(response.text, "pong");
  EXPECT_EQ(response.attempts, 3);
  EXPECT_GE(seconds_since(start), 1.9);  // the 10 ms backoff would not wait this long
  const std::string text = log.text();
  EXPECT_NE(text.find("LLM " + GetParam().spec + ": HTTP 429 (rate limited), retry 1/5 in 1.0 s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("retry 2/5 in 1.0 s"), std::string::npos) << text;
  EXPECT_NE(text.find("[warning]"), std::string::npos) << text;
}

TEST_P(LlmRobustness, RetriesOn500ThenSucceeds) {
  server_.script({testing::error_reply(500, "internal"), testing::error_reply(503, "overloaded")});
  const auto response = client()->complete(hello_request());
  EXPECT_EQ(response.text, "pong");
  EXPECT_EQ(response.attempts, 3);
}

TEST_P(LlmRobustness, GivesUpAfterMaxRetries) {
  settings_.max_retries = 2;
  server_.script({testing::error_reply(502, "bad gateway"), testing::error_reply(502, "x"),
                  testing::error_reply(502, "y"), testing::error_reply(502, "z")});
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_EQ(e.code(), ExitCode::job_failed);
  EXPECT_NE(std::string(e.what()).find("HTTP 502"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("gave up after 3 attempts"), std::string::npos) << e.what();
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_P(LlmRobustness, TimesOutAResponseSlowerThanTheTotalTimeout) {
  settings_.total_timeout = std::chrono::milliseconds(300);
  settings_.max_retries = 0;
  ScriptedReply slow = testing::openai_answer("late");
  slow.delay = std::chrono::seconds(3);
  server_.script({slow});
  const auto start = Clock::now();
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_LT(seconds_since(start), 2.5);
  EXPECT_EQ(e.code(), ExitCode::job_failed);
  EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
}

TEST_P(LlmRobustness, RetriesAfterATimeout) {
  settings_.total_timeout = std::chrono::milliseconds(300);
  ScriptedReply slow = testing::openai_answer("late");
  slow.delay = std::chrono::seconds(3);
  server_.script({slow});
  const auto response = client()->complete(hello_request());
  EXPECT_EQ(response.text, "pong");
  EXPECT_EQ(response.attempts, 2);
}

TEST_P(LlmRobustness, MalformedJsonIsRetriedOnceThenFails) {
  server_.script({{200, "{not json", {}, {}}});
  EXPECT_EQ(client()->complete(hello_request()).attempts, 2);

  server_.script({{200, "{not json", {}, {}}, {200, "[1, 2]", {}, {}}});
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_EQ(e.code(), ExitCode::job_failed);
  EXPECT_NE(std::string(e.what()).find("malformed answer"), std::string::npos) << e.what();
  EXPECT_EQ(server_.requests().size(), 4u);
}

TEST_P(LlmRobustness, DetectsATruncatedAnswer) {
  server_.script({GetParam().truncated_answer("def kernel(")});
  const auto response = client()->complete(hello_request());
  EXPECT_EQ(response.text, "def kernel(");
  EXPECT_TRUE(response.truncated);
  EXPECT_EQ(response.finish_reason, "length");
}

TEST_P(LlmRobustness, AuthenticationFailureStopsAtOnceNamingTheKey) {
  for (const int status : {401, 403}) {
    server_.script({testing::error_reply(status, "invalid key")});
    const Error e = error_of([&] { client()->complete(hello_request()); });
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    const std::string what = e.what();
    EXPECT_NE(what.find("authentication failed"), std::string::npos) << what;
    EXPECT_NE(what.find("check " + GetParam().key_env), std::string::npos) << what;
    EXPECT_NE(what.find("invalid key"), std::string::npos) << what;
  }
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_P(LlmRobustness, NotFoundPointsAtTheModelAndBaseUrl) {
  server_.script({testing::error_reply(404, "model not found")});
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_EQ(e.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(e.what()).find("model not found"), std::string::npos) << e.what();
  EXPECT_EQ(e.hint(), "check the model name and " + GetParam().base_env);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_P(LlmRobustness, BadRequestCarriesTheApiMessage) {
  server_.script({testing::error_reply(400, "prompt is too long: 300000 tokens > 200000")});
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_EQ(e.code(), ExitCode::job_failed);
  EXPECT_NE(std::string(e.what()).find("HTTP 400: prompt is too long"), std::string::npos)
      << e.what();
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_P(LlmRobustness, RefusesABodyOverTheSizeCap) {
  settings_.max_response_bytes = 1 << 20;
  server_.script({{200, std::string(3 << 20, 'x'), {}, {}}});
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_EQ(e.code(), ExitCode::job_failed);
  EXPECT_NE(std::string(e.what()).find("response larger than 1048576 bytes"), std::string::npos)
      << e.what();
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_P(LlmRobustness, RetriesWhenTheServerCannotBeReached) {
  settings_.max_retries = 2;
  server_.stop();
  LogCapture log;
  const Error e = error_of([&] { client()->complete(hello_request()); });
  EXPECT_EQ(e.code(), ExitCode::job_failed);
  EXPECT_NE(std::string(e.what()).find("gave up after 3 attempts"), std::string::npos) << e.what();
  EXPECT_NE(log.text().find("retry 2/2"), std::string::npos) << log.text();
}

INSTANTIATE_TEST_SUITE_P(
    WireFormats, LlmRobustness,
    ::testing::Values(WireFormat{"openai:test-model", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                                 [](const std::string& text) {
                                   return testing::openai_answer(text, "length");
                                 }},
                      WireFormat{"anthropic:test-model", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                                 [](const std::string& text) {
                                   return testing::anthropic_answer(text, "max_tokens");
                                 }}),
    [](const ::testing::TestParamInfo<WireFormat>& param) {
      return param.param.spec.substr(0, param.param.spec.find(':'));
    });

TEST(LlmOpenAi, HonoursRetryAfterAsAnHttpDate) {
  LlmTestServer server;
  ScopedEnv env(env_for(server));
  const std::time_t later = std::time(nullptr) + 2;
  std::tm tm{};
  ::gmtime_r(&later, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  server.script({testing::error_reply(429, "slow down", date)});
  const auto start = Clock::now();
  const auto response =
      make_llm_client("openai:test-model", fast_llm_settings())->complete(hello_request());
  EXPECT_EQ(response.attempts, 2);
  EXPECT_GE(seconds_since(start), 0.9);  // at least one whole second of the date was left
}

TEST(LlmBackoff, FullJitterIsBoundedAndReproducible) {
  LlmSettings settings;
  settings.backoff_base = std::chrono::milliseconds(100);
  settings.backoff_max = std::chrono::milliseconds(1000);
  settings.jitter_seed = 42;
  llm_detail::Backoff first(settings);
  llm_detail::Backoff second(settings);
  for (int retry = 1; retry <= 8; ++retry) {
    const auto delay = first.delay(retry, std::nullopt);
    EXPECT_EQ(delay, second.delay(retry, std::nullopt));
    EXPECT_GE(delay.count(), 0);
    EXPECT_LE(delay.count(), std::min<std::int64_t>(100LL << (retry - 1), 1000));
  }
  EXPECT_EQ(first.delay(1, std::chrono::seconds(2)), std::chrono::seconds(1));  // capped
  EXPECT_EQ(first.delay(1, std::chrono::milliseconds(300)), std::chrono::milliseconds(300));
}

}  // namespace
}  // namespace mblast
