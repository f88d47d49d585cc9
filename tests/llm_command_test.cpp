// The command: provider: prompt on stdin, answer on stdout, killed at the timeout.
#include <gtest/gtest.h>

#include "llm_server.hpp"
#include "mblast/llm.hpp"

namespace mblast {
namespace {

using testing::fast_llm_settings;
using testing::hello_request;

TEST(LlmCommand, AnswersWithStdout) {
  auto client = make_llm_client("command:cat >/dev/null; echo pong", fast_llm_settings());
  EXPECT_EQ(client->name(), "command:cat >/dev/null; echo pong");
  const auto response = client->complete(hello_request());
  EXPECT_EQ(response.text, "pong\n");
  EXPECT_EQ(response.provider, "command");
  EXPECT_EQ(response.finish_reason, "stop");
  EXPECT_TRUE(response.tokens_estimated);
  EXPECT_EQ(response.output_tokens, 2);  // 5 bytes
  EXPECT_GT(response.input_tokens, 10);
}

TEST(LlmCommand, ThePromptArrivesOnStdinWithRoleHeaders) {
  const auto response =
      make_llm_client("command:cat", fast_llm_settings())->complete(hello_request());
  EXPECT_EQ(response.text,
            "=== system ===\nYou are a health check.\n\n=== user ===\nReply with the single "
            "word: pong\n");
}

TEST(LlmCommand, AHangingCommandIsKilledAtTheTimeout) {
  LlmSettings settings = fast_llm_settings();
  settings.total_timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  try {
    make_llm_client("command:sleep 30", settings)->complete(hello_request());
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::job_failed);
    EXPECT_NE(std::string(e.what()).find("timed out after 0.3 s"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(LlmCommand, AFailingCommandReportsItsStderr) {
  try {
    make_llm_client("command:echo 'model overloaded' >&2; exit 3", fast_llm_settings())
        ->complete(hello_request());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::job_failed);
    EXPECT_NE(std::string(e.what()).find("exit 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("model overloaded"), std::string::npos) << e.what();
  }
}

TEST(LlmCommand, AMissingProgramIsAUsageError) {
  try {
    make_llm_client("command:mblast-no-such-agent --prompt", fast_llm_settings())
        ->complete(hello_request());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mblast
