// Cassettes: record through the real HTTP path, replay offline, in order, with clear misses.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "llm_server.hpp"
#include "mblast/llm.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::fast_llm_settings;
using testing::hello_request;
using testing::LlmTestServer;
using testing::ScopedEnv;
using testing::TempDir;

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(LlmCassette, KeyDependsOnTheRequestOnly) {
  const LlmRequest base = hello_request();
  EXPECT_EQ(cassette_key(base), cassette_key(hello_request()));
  EXPECT_EQ(cassette_key(base).size(), 64u);
  auto changed = [&](auto edit) {
    LlmRequest request = base;
    edit(request);
    return cassette_key(request) != cassette_key(base);
  };
  EXPECT_TRUE(changed([](LlmRequest& r) { r.role_tag = "fix"; }));
  EXPECT_TRUE(changed([](LlmRequest& r) { r.messages[1].content += "!"; }));
  EXPECT_TRUE(changed([](LlmRequest& r) { r.messages[0].role = "user"; }));
  EXPECT_TRUE(changed([](LlmRequest& r) { r.max_tokens = 65; }));
  EXPECT_TRUE(changed([](LlmRequest& r) { r.temperature = 0.3; }));
  EXPECT_TRUE(changed([](LlmRequest& r) { r.seed = 1; }));
}

TEST(LlmCassette, RecordThenReplayOffline) {
  TempDir dir;
  const auto cassette = dir / "run.jsonl";
  std::vector<std::string> recorded;
  {
    LlmTestServer server;
    ScopedEnv env({{"OPENAI_API_KEY", "sk-test-record-1"},
                   {"OPENAI_BASE_URL", server.openai_base()},
                   {"ANTHROPIC_API_KEY", "sk-ant-record-2"},
                   {"ANTHROPIC_BASE_URL", server.anthropic_base()}});
    LlmSettings settings = fast_llm_settings();
    settings.record_path = cassette.string();
    auto openai = make_llm_client("openai:test-model", settings);
    auto anthropic = make_llm_client("anthropic:test-model", settings);
    server.set_answer("first");
    recorded.push_back(openai->complete(hello_request()).text);
    server.set_answer("second");  // the same request again gets a different answer
    recorded.push_back(openai->complete(hello_request()).text);
    server.set_answer("from claude");
    recorded.push_back(anthropic->complete(hello_request("critic", "Judge this.")).text);
    server.stop();
  }
  EXPECT_EQ(recorded, (std::vector<std::string>{"first", "second", "from claude"}));

  struct stat info {};
  ASSERT_EQ(::stat(cassette.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  const auto lines = lines_of(cassette);
  ASSERT_EQ(lines.size(), 3u);
  const auto exchange = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(exchange["key"], cassette_key(hello_request("critic", "Judge this.")));
  EXPECT_EQ(exchange["request"], canonical_request(hello_request("critic", "Judge this.")));
  EXPECT_EQ(exchange["response"]["text"], "from claude");
  EXPECT_EQ(exchange["response"]["provider"], "anthropic");
  EXPECT_EQ(exchange["response"]["model"], "test-model");
  EXPECT_EQ(exchange["note"], "recorded");

  auto replay = make_llm_client("replay:" + cassette.string(), LlmSettings{});
  EXPECT_EQ(replay->name(), "replay:" + cassette.string());
  const auto critic = replay->complete(hello_request("critic", "Judge this."));
  EXPECT_EQ(critic.text, "from claude");
  EXPECT_EQ(critic.provider, "anthropic");
  EXPECT_EQ(critic.input_tokens, 19);
  EXPECT_EQ(replay->complete(hello_request()).text, "first");
  EXPECT_EQ(replay->complete(hello_request()).text, "second");
}

TEST(LlmCassette, AMissSaysWhichRequestAndHowToRecord) {
  TempDir dir;
  std::ofstream(dir / "empty.jsonl") << "";
  auto replay = make_llm_client("replay:" + (dir / "empty.jsonl").string(), LlmSettings{});
  const std::string long_message = "Optimize this kernel. " + std::string(300, 'k');
  try {
    replay->complete(hello_request("fix", long_message));
    FAIL() << "a miss did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ExitCode::job_failed);
    EXPECT_NE(what.find("fix request"), std::string::npos) << what;
    EXPECT_NE(what.find(long_message.substr(0, 200) + "..."), std::string::npos) << what;
    EXPECT_EQ(what.find(long_message.substr(0, 201)), std::string::npos) << what;
    EXPECT_NE(e.hint().find("--llm-record"), std::string::npos) << e.hint();
  }
}

TEST(LlmCassette, AuthoredExchangesNeedNoKeyAndRunOut) {
  const std::filesystem::path fixture =
      std::filesystem::path(MBLAST_SOURCE_DIR) / "tests/fixtures/llm/authored.jsonl";
  auto replay = make_llm_client("replay:" + fixture.string(), LlmSettings{});
  const auto first = replay->complete(hello_request());
  EXPECT_EQ(first.text, "pong");
  EXPECT_EQ(first.provider, "openai");
  EXPECT_EQ(first.model, "gpt-4o");
  const auto second = replay->complete(hello_request());
  EXPECT_EQ(second.text, "pong again");
  EXPECT_TRUE(second.truncated);
  try {
    replay->complete(hello_request());
    FAIL() << "a used-up exchange was served again";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all used"), std::string::npos) << e.what();
  }
}

TEST(LlmCassette, AuthoredMatchersAnswerByRoleAndContentInFileOrder) {
  TempDir dir;
  std::ofstream(dir / "match.jsonl")
      << R"({"match": {"role_tag": "actor", "contains": ["softmax", "speedup"]}, )"
      << R"("response": {"text": "actor one"}, "note": "authored"})"
      << "\n"
      << R"({"match": {"role_tag": "actor"}, "response": {"text": "actor two"}})"
      << "\n"
      << R"({"match": {"role_tag": "fix", "contains": "SyntaxError"}, )"
      << R"("response": {"text": "the fix"}})"
      << "\n";
  auto replay = make_llm_client("replay:" + (dir / "match.jsonl").string(), LlmSettings{});
  // Content that differs from run to run (timings) does not matter; the needles do.
  EXPECT_EQ(replay->complete(hello_request("actor", "row softmax, speedup 1.07x")).text,
            "actor one");
  EXPECT_EQ(replay->complete(hello_request("actor", "row softmax, speedup 1.31x")).text,
            "actor two");
  EXPECT_THROW(replay->complete(hello_request("fix", "NameError: x")), Error);
  EXPECT_EQ(replay->complete(hello_request("fix", "SyntaxError: invalid syntax")).text, "the fix");
  EXPECT_THROW(replay->complete(hello_request("actor", "softmax speedup")), Error);  // all used
}

TEST(LlmCassette, BadCassettesAreUsageErrors) {
  TempDir dir;
  std::ofstream(dir / "bad.jsonl")
      << "{\"key\": \"abc\", \"response\": {\"text\": \"x\"}}\nnot json\n";
  for (const std::filesystem::path& path : {dir / "bad.jsonl", dir / "missing.jsonl"}) {
    try {
      make_llm_client("replay:" + path.string(), LlmSettings{});
      FAIL() << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
    }
  }
  try {
    make_llm_client("replay:" + (dir / "bad.jsonl").string(), LlmSettings{});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mblast
