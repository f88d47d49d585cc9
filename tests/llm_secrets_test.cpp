// Keys must never reach logs, error messages or cassettes, even when a server or command echoes
// them back.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "llm_server.hpp"
#include "mblast/llm.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::error_reply;
using testing::fast_llm_settings;
using testing::hello_request;
using testing::LlmTestServer;
using testing::LogCapture;
using testing::ScopedEnv;
using testing::ScriptedReply;
using testing::TempDir;

constexpr const char* kOpenAiSecret = "sk-test-SECRET-123456";
constexpr const char* kAnthropicSecret = "sk-ant-SECRET-654321";

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void expect_no_secret(const std::string& text, const std::string& where) {
  EXPECT_EQ(text.find(kOpenAiSecret), std::string::npos) << where << ":\n" << text;
  EXPECT_EQ(text.find(kAnthropicSecret), std::string::npos) << where << ":\n" << text;
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << where << ":\n" << text;
}

TEST(LlmSecrets, RedactsSecretLookingVariables) {
  ScopedEnv env({{"MBLAST_TEST_API_KEY", "key-value-1234"},
                 {"MBLAST_TEST_TOKEN", "token-value-5678"},
                 {"MBLAST_TEST_PLAIN", "plain-value-0000"},
                 {"MBLAST_SHORT_TOKEN", "abc"}});
  EXPECT_EQ(redact_secrets("a key-value-1234 b token-value-5678 c plain-value-0000 abc"),
            "a *** b *** c plain-value-0000 abc");
  EXPECT_EQ(redact_secrets("key-value-1234key-value-1234"), "******");
}

TEST(LlmSecrets, AWholeExchangeLeavesNoKeyAnywhere) {
  TempDir dir;
  LlmTestServer server;
  server.expect_keys(kOpenAiSecret, kAnthropicSecret);
  ScopedEnv env({{"OPENAI_API_KEY", kOpenAiSecret},
                 {"OPENAI_BASE_URL", server.openai_base()},
                 {"ANTHROPIC_API_KEY", kAnthropicSecret},
                 {"ANTHROPIC_BASE_URL", server.anthropic_base()}});
  LogCapture log;
  LlmSettings settings = fast_llm_settings();
  settings.record_path = (dir / "run.jsonl").string();
  settings.total_timeout = std::chrono::milliseconds(400);
  settings.max_retries = 1;
  auto ledger = std::make_shared<LlmLedger>();

  std::string errors;
  int answered = 0;
  const auto exchange = [&](const std::string& spec, std::vector<ScriptedReply> script) {
    server.script(std::move(script));
    try {
      BudgetClient client(make_llm_client(spec, settings), ledger);
      client.complete(hello_request());
      ++answered;
    } catch (const Error& e) {
      errors += std::string(e.what()) + "\n" + e.hint() + "\n";
    }
  };
  ScriptedReply slow = testing::openai_answer("late");
  slow.delay = std::chrono::seconds(2);
  for (const std::string spec : {"openai:test-model", "anthropic:test-model"}) {
    const std::string echoed = std::string("key ") + kOpenAiSecret + " / " + kAnthropicSecret;
    exchange(spec, {});
    exchange(spec, {error_reply(429, "slow down")});
    exchange(spec, {error_reply(500, echoed)});
    exchange(spec, {error_reply(401, "Incorrect API key provided: " + echoed)});
    exchange(spec, {error_reply(400, echoed)});
    exchange(spec, {{200, echoed, {}, {}}, {200, echoed, {}, {}}});
    exchange(spec, {slow, slow});
    exchange(spec, {error_reply(503, echoed), error_reply(503, echoed)});
  }
  exchange("command:echo \"$OPENAI_API_KEY $ANTHROPIC_API_KEY\" >&2; exit 1", {});
  server.stop();
  exchange("openai:test-model", {});  // connection refused

  EXPECT_EQ(answered, 6);  // plain, after 429, after 500, per provider
  EXPECT_NE(errors.find("***"), std::string::npos) << errors;
  EXPECT_NE(log.text().find("***"), std::string::npos) << log.text();
  expect_no_secret(errors, "error messages");
  expect_no_secret(log.text(), "log");
  expect_no_secret(ledger->to_json().dump(), "ledger");
  ASSERT_TRUE(std::filesystem::exists(dir / "run.jsonl"));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    expect_no_secret(read_all(entry.path()), entry.path().string());
  }
}

TEST(LlmSecrets, TheBinaryLeavesNoKeyInOutputOrCassette) {
  TempDir dir;
  LlmTestServer server;
  server.expect_keys(kOpenAiSecret, kAnthropicSecret);
  const std::string echoed = std::string("bad key ") + kOpenAiSecret + " " + kAnthropicSecret;
  const std::map<std::string, std::optional<std::string>> env = {
      {"OPENAI_API_KEY", kOpenAiSecret},        {"OPENAI_BASE_URL", server.openai_base()},
      {"ANTHROPIC_API_KEY", kAnthropicSecret},  {"ANTHROPIC_BASE_URL", server.anthropic_base()},
      {"XDG_CONFIG_HOME", dir.path().string()}, {"MBLAST_LLM", std::nullopt},
      {"MBLAST_LLM_BACKOFF_MS", "10"}};
  const std::vector<std::vector<ScriptedReply>> scripts = {
      {error_reply(429, echoed)}, {error_reply(401, echoed)}, {error_reply(400, echoed)}};
  for (const std::string spec : {"openai:test-model", "anthropic:test-model"}) {
    for (const auto& script : scripts) {
      for (const bool json : {false, true}) {
        server.script(script);
        std::vector<std::string> args = {
            "-vv", "llm", "ping", "--llm", spec, "--llm-record", (dir / "ping.jsonl").string()};
        if (json) args.push_back("--json");
        const auto result = testing::run_mblast(args, env);
        expect_no_secret(result.out, "stdout of " + spec);
        expect_no_secret(result.err, "stderr of " + spec);
      }
    }
  }
  expect_no_secret(read_all(dir / "ping.jsonl"), "cassette");
  EXPECT_FALSE(read_all(dir / "ping.jsonl").empty());
}

}  // namespace
}  // namespace mblast
