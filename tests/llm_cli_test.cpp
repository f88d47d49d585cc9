// `mblast llm ping` through the real binary against the local server.
#include <gtest/gtest.h>

#include <fstream>

#include "llm_server.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::error_reply;
using testing::LlmTestServer;
using testing::run_mblast;
using testing::TempDir;

constexpr const char* kOpenAiKey = "sk-cli-openai-0001";
constexpr const char* kAnthropicKey = "sk-cli-anthropic-0002";

std::map<std::string, std::optional<std::string>> env_for(const LlmTestServer& server,
                                                          const TempDir& config_home) {
  return {{"OPENAI_API_KEY", kOpenAiKey},
          {"OPENAI_BASE_URL", server.openai_base()},
          {"ANTHROPIC_API_KEY", kAnthropicKey},
          {"ANTHROPIC_BASE_URL", server.anthropic_base()},
          {"XDG_CONFIG_HOME", config_home.path().string()},
          {"MBLAST_LLM", std::nullopt},
          {"MBLAST_LLM_BACKOFF_MS", "10"}};
}

std::size_t count(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

struct Provider {
  std::string spec;
  std::string name;
  std::string key_env;
};

void PrintTo(const Provider& provider, std::ostream* out) { *out << provider.spec; }

class LlmPing : public ::testing::TestWithParam<Provider> {
 protected:
  LlmTestServer server_;
  TempDir dir_;
  std::map<std::string, std::optional<std::string>> env_ = env_for(server_, dir_);

  ProcessResult ping(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"llm", "ping", "--llm", GetParam().spec};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_mblast(args, env_);
  }
};

TEST_P(LlmPing, Succeeds) {
  server_.expect_keys(kOpenAiKey, kAnthropicKey);
  const auto result = ping();
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("provider       " + GetParam().name + "\n"), std::string::npos);
  EXPECT_NE(result.out.find("model          test-model\n"), std::string::npos);
  EXPECT_NE(result.out.find("attempts       1\n"), std::string::npos);
  EXPECT_NE(result.out.find("finish reason  stop\n"), std::string::npos);
  EXPECT_NE(result.out.find("reply          pong\n"), std::string::npos);
  EXPECT_NE(result.out.find("latency        "), std::string::npos);
  EXPECT_NE(result.out.find("tokens         "), std::string::npos);
  EXPECT_EQ(count(result.err, "retry"), 0u) << result.err;
  ASSERT_EQ(server_.requests().size(), 1u);
  const auto body = server_.requests()[0].json();
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_EQ(body["messages"].back()["content"], "Reply with the single word: pong");
}

TEST_P(LlmPing, SucceedsAfterTwoVisibleRetriesOn429) {
  server_.script({error_reply(429, "rate limited", "1"), error_reply(429, "rate limited", "1")});
  const auto result = ping();
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("attempts       3\n"), std::string::npos) << result.out;
  EXPECT_EQ(count(result.err, "retry"), 2u) << result.err;
  EXPECT_NE(result.err.find("[warning] LLM " + GetParam().spec +
                            ": HTTP 429 (rate limited), retry 1/5 in 1.0 s"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("retry 2/5 in 1.0 s"), std::string::npos) << result.err;
}

TEST_P(LlmPing, JsonForScripts) {
  server_.script({error_reply(503, "busy")});
  const auto result = ping({"--json"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["ok"], true);
  EXPECT_EQ(json["provider"], GetParam().name);
  EXPECT_EQ(json["model"], "test-model");
  EXPECT_EQ(json["attempts"], 2);
  EXPECT_EQ(json["reply"], "pong");
  EXPECT_EQ(json["finish_reason"], "stop");
  EXPECT_GT(json["input_tokens"].get<int>(), 0);
  EXPECT_GT(json["output_tokens"].get<int>(), 0);
  EXPECT_TRUE(json["latency_s"].is_number());
  EXPECT_TRUE(json["error"].is_null());
}

TEST_P(LlmPing, BadKeyExitsTwoNamingTheVariable) {
  server_.expect_keys("sk-the-right-openai-key", "sk-the-right-anthropic-key");
  const auto result = ping();
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("authentication failed"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(GetParam().key_env), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("fix:"), std::string::npos) << result.err;
  EXPECT_EQ(server_.requests().size(), 1u);

  const auto json_result = ping({"--json"});
  EXPECT_EQ(json_result.exit_code, 2);
  const auto json = nlohmann::json::parse(json_result.out);
  EXPECT_EQ(json["ok"], false);
  EXPECT_EQ(json["provider"], GetParam().name);
  EXPECT_NE(json["error"].get<std::string>().find(GetParam().key_env), std::string::npos);
}

TEST_P(LlmPing, FailureAfterRetriesExitsOne) {
  std::ofstream(dir_ / "config.toml") << "[llm]\nmax_retries = 1\n";
  server_.script({error_reply(500, "boom"), error_reply(500, "boom again")});
  const auto result = ping({"--config", (dir_ / "config.toml").string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("HTTP 500 (boom again); gave up after 2 attempts"), std::string::npos)
      << result.err;
}

TEST_P(LlmPing, RecordsACassetteThatReplaysOffline) {
  const auto cassette = (dir_ / "ping.jsonl").string();
  server_.set_answer("recorded pong");
  ASSERT_EQ(ping({"--llm-record", cassette}).exit_code, 0);
  server_.stop();
  const auto result = run_mblast({"llm", "ping", "--llm", "replay:" + cassette}, env_);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("reply          recorded pong\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("provider       " + GetParam().name + "\n"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Providers, LlmPing,
    ::testing::Values(Provider{"openai:test-model", "openai", "OPENAI_API_KEY"},
                      Provider{"anthropic:test-model", "anthropic", "ANTHROPIC_API_KEY"}),
    [](const ::testing::TestParamInfo<Provider>& param) { return param.param.name; });

TEST(LlmPingCli, ConfigurationErrorsExitTwo) {
  TempDir dir;
  const std::map<std::string, std::optional<std::string>> env = {
      {"XDG_CONFIG_HOME", dir.path().string()},
      {"MBLAST_LLM", std::nullopt},
      {"OPENAI_API_KEY", std::nullopt},
      {"ANTHROPIC_API_KEY", std::nullopt}};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"llm", "ping", "--llm", "gemini:pro"}, "unknown LLM provider"},
      {{"llm", "ping"}, "no LLM is configured"},
      {{"llm", "ping", "--llm", "openai:gpt-4o"}, "OPENAI_API_KEY"},
      {{"llm", "ping", "--llm", "replay:" + (dir / "none.jsonl").string()}, "cassette"},
      {{"llm", "ping", "--config", (dir / "missing.toml").string()}, "does not exist"},
      {{"llm"}, "usage error"},
  };
  for (const auto& [args, expected] : cases) {
    const auto result = run_mblast(args, env);
    EXPECT_EQ(result.exit_code, 2) << args.back() << "\n" << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("fix:"), std::string::npos) << result.err;
  }
  const auto json = run_mblast({"llm", "ping", "--llm", "gemini:pro", "--json"}, env);
  EXPECT_EQ(json.exit_code, 2);
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["ok"], false);
  EXPECT_EQ(parsed["provider"], "gemini");
  EXPECT_NE(parsed["error"].get<std::string>().find("unknown LLM provider"), std::string::npos);
}

TEST(LlmPingCli, CommandProvider) {
  const auto result =
      run_mblast({"llm", "ping", "--json", "--llm", "command:cat >/dev/null; echo pong"}, {});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["provider"], "command");
  EXPECT_EQ(json["reply"], "pong\n");
  EXPECT_EQ(json["tokens_estimated"], true);
}

}  // namespace
}  // namespace mblast
