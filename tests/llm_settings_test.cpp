// Where the provider, per-role models, timeouts and prices come from; provider specs.
#include <gtest/gtest.h>

#include <fstream>

#include "llm_server.hpp"
#include "mblast/llm.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::error_of;

using testing::ScopedEnv;
using testing::TempDir;

// A clean environment with the default config file in `dir`.
std::map<std::string, std::optional<std::string>> clean_env(const TempDir& dir) {
  return {{"XDG_CONFIG_HOME", dir.path().string()},
          {"MBLAST_LLM", std::nullopt},
          {"MBLAST_LLM_BACKOFF_MS", std::nullopt},
          {"OPENAI_API_KEY", std::nullopt},
          {"ANTHROPIC_API_KEY", std::nullopt}};
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::filesystem::path default_config(const TempDir& dir) { return dir / "mblast" / "config.toml"; }

TEST(LlmSettings, ProviderPrecedence) {
  TempDir dir;
  ScopedEnv env(clean_env(dir));
  EXPECT_EQ(load_llm_settings(std::nullopt, "").default_spec, "none");

  ScopedEnv anthropic("ANTHROPIC_API_KEY", "sk-ant-xyz123");
  EXPECT_EQ(load_llm_settings(std::nullopt, "").default_spec, "anthropic:claude-sonnet-4-5");

  ScopedEnv openai("OPENAI_API_KEY", "sk-xyz123456");
  EXPECT_EQ(load_llm_settings(std::nullopt, "").default_spec, "openai:gpt-4o");

  write_file(default_config(dir), "[llm]\ndefault = \"command:cat\"\n");
  EXPECT_EQ(load_llm_settings(std::nullopt, "").default_spec, "command:cat");

  ScopedEnv variable("MBLAST_LLM", " replay:run.jsonl ");
  EXPECT_EQ(load_llm_settings(std::nullopt, "").default_spec, "replay:run.jsonl");

  EXPECT_EQ(load_llm_settings(std::nullopt, "openai:local").default_spec, "openai:local");
}

TEST(LlmSettings, ReadsRolesTimeoutsRetriesAndPrices) {
  TempDir dir;
  ScopedEnv env(clean_env(dir));
  write_file(dir / "custom.toml", R"(
[llm]
default = "openai:gpt-4o"
actor = "anthropic:claude-sonnet-4-5"
critic = "openai:gpt-4o-mini"
connect_timeout_s = 2.5
timeout_s = 120
max_retries = 3
max_response_mb = 1

[prices."openai:gpt-4o"]
input_per_mtok = 2.5
output_per_mtok = 10
)");
  const LlmSettings settings = load_llm_settings(dir / "custom.toml", "");
  EXPECT_EQ(settings.default_spec, "openai:gpt-4o");
  EXPECT_EQ(spec_for_role("actor", settings), "anthropic:claude-sonnet-4-5");
  EXPECT_EQ(spec_for_role("critic", settings), "openai:gpt-4o-mini");
  EXPECT_EQ(spec_for_role("fix", settings), "openai:gpt-4o");
  EXPECT_EQ(settings.connect_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(settings.total_timeout, std::chrono::seconds(120));
  EXPECT_EQ(settings.max_retries, 3);
  EXPECT_EQ(settings.max_response_bytes, 1u << 20);
  ASSERT_EQ(settings.prices.size(), 1u);
  EXPECT_DOUBLE_EQ(settings.prices.at("openai:gpt-4o").input_per_mtok, 2.5);
  EXPECT_DOUBLE_EQ(settings.prices.at("openai:gpt-4o").output_per_mtok, 10);

  // An explicit choice applies to every role.
  const LlmSettings forced = load_llm_settings(dir / "custom.toml", "replay:x.jsonl");
  EXPECT_EQ(spec_for_role("actor", forced), "replay:x.jsonl");
  EXPECT_EQ(forced.prices.size(), 1u);
}

TEST(LlmSettings, ShipsNoPrices) {
  TempDir dir;
  ScopedEnv env(clean_env(dir));
  EXPECT_TRUE(load_llm_settings(std::nullopt, "openai:gpt-4o").prices.empty());
}

TEST(LlmSettings, BadConfigFilesAreUsageErrors) {
  TempDir dir;
  ScopedEnv env(clean_env(dir));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[llm\ndefault = 1", "not valid TOML at line 1"},
      {"[llm]\ndefault = 3", "[llm] default"},
      {"[llm]\nmax_retries = -1", "max_retries"},
      {"[llm]\nmax_retries = 1.5", "max_retries"},
      {"[llm]\ntimeout_s = 0", "timeout_s"},
      {"[llm]\ntimeout_s = \"long\"", "timeout_s"},
      {"llm = 3", "[llm] must be a table"},
      {"[prices.\"openai:gpt-4o\"]\ninput_per_mtok = 1", "output_per_mtok"},
      {"[prices.\"openai:gpt-4o\"]\ninput_per_mtok = -1\noutput_per_mtok = 1", "input_per_mtok"},
  };
  for (const auto& [text, expected] : cases) {
    write_file(dir / "bad.toml", text);
    const Error e = error_of([&] { load_llm_settings(dir / "bad.toml", ""); });
    EXPECT_EQ(e.code(), ExitCode::bad_input) << text;
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << text << "\n" << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos) << e.what();
  }
  const Error missing = error_of([&] { load_llm_settings(dir / "missing.toml", ""); });
  EXPECT_EQ(missing.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(missing.what()).find("does not exist"), std::string::npos);
}

TEST(LlmSettings, BackoffFromTheEnvironment) {
  TempDir dir;
  ScopedEnv env(clean_env(dir));
  EXPECT_EQ(load_llm_settings(std::nullopt, "").backoff_base, std::chrono::seconds(1));
  {
    ScopedEnv backoff("MBLAST_LLM_BACKOFF_MS", "25");
    EXPECT_EQ(load_llm_settings(std::nullopt, "").backoff_base, std::chrono::milliseconds(25));
  }
  ScopedEnv bad("MBLAST_LLM_BACKOFF_MS", "soon");
  EXPECT_EQ(error_of([] { load_llm_settings(std::nullopt, ""); }).code(), ExitCode::bad_input);
}

TEST(LlmSpecs, UnknownProvidersAndNoneAreUsageErrors) {
  for (const std::string spec : {"gemini:pro", "openai", "anthropic:", "command:", "none", ""}) {
    const Error e = error_of([&] { make_llm_client(spec, LlmSettings{}); });
    EXPECT_EQ(e.code(), ExitCode::bad_input) << spec;
  }
  const Error unknown = error_of([] { make_llm_client("gemini:pro", LlmSettings{}); });
  EXPECT_NE(std::string(unknown.what()).find("unknown LLM provider \"gemini\""), std::string::npos);
  for (const char* provider : {"openai:", "anthropic:", "command:", "replay:"}) {
    EXPECT_NE(unknown.hint().find(provider), std::string::npos) << unknown.hint();
  }
  const Error none = error_of([] { make_llm_client("none", LlmSettings{}); });
  EXPECT_NE(std::string(none.what()).find("built-in techniques"), std::string::npos);
}

TEST(LlmSpecs, ClientForRoleUsesThePerRoleSpec) {
  LlmSettings settings;
  settings.default_spec = "command:echo default";
  settings.per_role["critic"] = "command:echo critic";
  EXPECT_EQ(client_for_role("critic", settings)->name(), "command:echo critic");
  EXPECT_EQ(client_for_role("actor", settings)->name(), "command:echo default");
}

TEST(LlmSpecs, CostBudgetsNeedPrices) {
  LlmSettings settings;
  settings.default_spec = "openai:gpt-4o";
  settings.per_role["critic"] = "openai:gpt-4o-mini";
  settings.prices["openai:gpt-4o"] = {2.5, 10};
  const Error e = error_of([&] { require_prices_for_cost_budget(settings); });
  EXPECT_EQ(e.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(e.what()).find("openai:gpt-4o-mini"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("[prices.\"openai:gpt-4o-mini\"]"), std::string::npos) << e.hint();
  settings.prices["openai:gpt-4o-mini"] = {0.15, 0.6};
  EXPECT_NO_THROW(require_prices_for_cost_budget(settings));
}

}  // namespace
}  // namespace mblast
