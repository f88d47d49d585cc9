// The real binary, run as users and scripts run it: exit codes, messages, JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/kb.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::run_mblast;
using testing::TempDir;
namespace fs = std::filesystem;

std::vector<std::string> with_kb(const TempDir& dir, std::vector<std::string> args,
                                 const std::string& name = "kb.sqlite") {
  args.push_back("--kb");
  args.push_back((dir / name).string());
  return args;
}

// Runs `mblast ARGS...` as an unprivileged user, as people do: root reads and writes through file
// permissions, so as root it runs through setpriv as nobody (uid and gid 65534) with HOME=`home`.
// nullopt when running as root and setpriv (util-linux) is missing; the caller skips.
std::optional<ProcessResult> run_mblast_unprivileged(const std::vector<std::string>& args,
                                                     const std::filesystem::path& home) {
  if (::geteuid() != 0) return run_mblast(args);
  auto setpriv = find_program("setpriv");
  if (!setpriv) return std::nullopt;
  ProcessSpec spec;
  spec.argv = {setpriv->string(), "--reuid=65534", "--regid=65534", "--clear-groups",
               testing::mblast_binary()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {{"HOME", home.string()}};
  return run_process(spec);
}

TEST(Cli, BadUsageExitsTwoWithAMessage) {
  TempDir dir;
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"frobnicate"},
      {"kb"},
      {"kb", "query", "--kind", "nonsense"},
      {"kb", "query", "--limit", "0"},
      {"kb", "query", "--no-such-flag"},
      {"kb", "import"},
      {"kb", "merge", "-o", (dir / "out.sqlite").string()},
      {"kb", "merge", (dir / "missing.sqlite").string(), "-o", (dir / "out.sqlite").string()},
  };
  for (const auto& args : bad) {
    auto result = run_mblast(with_kb(dir, args));
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(result.exit_code, 2) << joined << "\n" << result.err;
    EXPECT_NE(result.err.find("fix:"), std::string::npos) << joined << "\n" << result.err;
    EXPECT_TRUE(result.out.empty()) << joined;
  }
}

TEST(Cli, EachBadInputSaysWhatWasWrong) {
  TempDir dir;
  std::filesystem::create_directories(dir / "a_directory");
  const std::string problem = std::string(MBLAST_SOURCE_DIR) + "/tests/problems/relu_small.py";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"kb", "query", "--limit", "0"}, "--limit: must be greater than 0, got 0"},
      {{"optimize", problem, "--max-evaluations", "0"},
       "--max-evaluations: must be greater than 0"},
      {{"optimize", problem, "--time-limit", "0"}, "--time-limit: must be greater than 0, got 0"},
      {{"eval", problem, "--candidate", problem, "--atol", "-1"}, "--atol: must be greater than 0"},
      {{"eval", problem, "--candidate", problem, "--timeout", "-5"},
       "--timeout: must be 0 or more, got -5"},
      {{"eval", problem, "--candidate", problem, "--rtol", "x"},
       "--rtol: expects a number, got 'x'"},
      {{"optimise"}, "no command 'optimise' (did you mean optimize?)"},
      {{"kb", "quer"}, "no command 'kb quer' (did you mean kb query?)"},
      {{"frobnicate"}, "no command 'frobnicate'; the commands are: optimize"},
      {{"kb"}, "`mblast kb` needs a command: init, query"},
      {{"kb", "stats", "--kb", (dir / "a_directory").string()}, "is a directory, not a file"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    if (std::find(args.begin(), args.end(), "--kb") == args.end()) args = with_kb(dir, args);
    const auto result = run_mblast(args);
    EXPECT_EQ(result.exit_code, 2) << c.says << "\n" << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("fix:"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("internal error"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("179769313486"), std::string::npos) << result.err;
  }
}

TEST(Cli, HelpExplainsEveryCommandAndFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> expected = {
      {{"--help"}, {"kb", "doctor", "--kb", "--verbose", "--quiet"}},
      {{"kb", "--help"}, {"init", "query", "show", "stats", "export", "import", "merge"}},
      {{"kb", "query", "--help"},
       {"--kind", "--backend", "--state", "--technique", "--task", "--hardware", "--limit",
        "--json"}},
      {{"kb", "merge", "--help"}, {"INPUTS", "--output"}},
      {{"doctor", "--help"}, {"--json"}},
      {{"regions", "--help"}, {"PROBLEM", "--device", "--timeout", "--json", "torch.fx"}},
  };
  for (const auto& [args, words] : expected) {
    auto result = run_mblast(args);
    EXPECT_EQ(result.exit_code, 0) << args[0];
    for (const auto& word : words) {
      EXPECT_NE(result.out.find(word), std::string::npos) << args.back() << " lacks " << word;
    }
  }
  auto version = run_mblast({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("mblast "), std::string::npos);
}

TEST(Cli, RegionsShowsAProblemsOpsTheirSharesAndItsWindows) {
  const auto problem = fs::path(MBLAST_SOURCE_DIR) / "tests" / "problems" / "conv_small.py";
  const auto result = run_mblast({"regions", problem.string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto regions = nlohmann::json::parse(result.out);
  EXPECT_TRUE(regions.at("captured").get<bool>());
  EXPECT_TRUE(regions.at("windows_recompose").get<bool>());
  double total = 0;
  for (const auto& op : regions.at("ops")) total += op.at("share").get<double>();
  EXPECT_NEAR(total, 1.0, 1e-6);
  const auto text = run_mblast({"regions", problem.string()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("region windows"), std::string::npos) << text.out;
  const auto no_model = fs::path(MBLAST_SOURCE_DIR) / "tests" / "problems" / "no_model.py";
  const auto bad = run_mblast({"regions", no_model.string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("Model"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("fix:"), std::string::npos) << bad.err;
}

TEST(Cli, QueryListsSeedTechniquesAsJson) {
  TempDir dir;
  auto result = run_mblast(with_kb(dir, {"kb", "query", "--kind", "techniques", "--backend", "cuda",
                                         "--json", "--limit", "1000"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto rows = nlohmann::json::parse(result.out);
  ASSERT_GE(rows.size(), 20u);
  bool has_builtin = false;
  for (const auto& row : rows) {
    auto backends = row.at("backends").get<std::vector<std::string>>();
    EXPECT_NE(std::find(backends.begin(), backends.end(), "cuda"), backends.end());
    EXPECT_FALSE(row.at("description").get<std::string>().empty());
    has_builtin = has_builtin || row.at("implementer") == "builtin";
  }
  EXPECT_TRUE(has_builtin);
  EXPECT_TRUE(std::filesystem::exists(dir / "kb.sqlite"));  // a missing KB is created

  auto table =
      run_mblast(with_kb(dir, {"kb", "query", "--kind", "states", "--state", "memory-bound"}));
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_EQ(table.out.rfind("ID", 0), 0u);
  EXPECT_NE(table.out.find("memory-bound/"), std::string::npos);
}

TEST(Cli, EnvironmentChoosesTheDefaultKb) {
  TempDir dir;
  auto path = dir / "from-env.sqlite";
  auto result = run_mblast({"kb", "init"}, {{"MBLAST_KB", path.string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_NE(result.out.find(path.string()), std::string::npos);
}

TEST(Cli, ShowAndStats) {
  TempDir dir;
  auto show = run_mblast(with_kb(dir, {"kb", "show", "memory-bound", "--json"}));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto shown = nlohmann::json::parse(show.out);
  EXPECT_EQ(shown["kind"], "state");
  EXPECT_FALSE(shown["children"].empty());

  auto missing = run_mblast(with_kb(dir, {"kb", "show", "no-such-thing"}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such-thing"), std::string::npos);

  auto stats = run_mblast(with_kb(dir, {"kb", "stats", "--json"}));
  ASSERT_EQ(stats.exit_code, 0);
  auto parsed = nlohmann::json::parse(stats.out);
  EXPECT_EQ(parsed["schema_version"], KnowledgeBase::latest_schema_version());
  EXPECT_GT(parsed["file_bytes"].get<std::int64_t>(), 0);
  EXPECT_GE(parsed["rows"]["techniques"].get<std::int64_t>(), 40);
}

TEST(Cli, ExportImportMergeRoundTrip) {
  TempDir dir;
  {
    KnowledgeBase kb(dir / "a.sqlite");
    AttemptRow row;
    row.task = "relu";
    row.backend = "cuda";
    row.hardware = "h";
    row.outcome = "correct";
    row.state_id = "memory-bound";
    row.technique_id = kb.techniques("cuda").at(0).id;
    row.reward = 0.5;
    kb.add_attempt(row);
  }
  auto exported = dir / "a.jsonl";
  ASSERT_EQ(
      run_mblast(with_kb(dir, {"kb", "export", "-o", exported.string()}, "a.sqlite")).exit_code, 0);
  auto imported =
      run_mblast(with_kb(dir, {"kb", "import", exported.string(), "--json"}, "b.sqlite"));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(nlohmann::json::parse(imported.out)["inserted"], 1);  // seed rows were there already

  auto again = run_mblast(with_kb(dir, {"kb", "export"}, "b.sqlite"));
  std::ifstream in(exported);
  std::string original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(again.out, original);

  std::vector<std::string> merge = {"kb",
                                    "merge",
                                    (dir / "a.sqlite").string(),
                                    (dir / "b.sqlite").string(),
                                    "-o",
                                    (dir / "out.sqlite").string(),
                                    "--json"};
  auto first = run_mblast(merge);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = run_mblast(merge);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  for (const auto& input : nlohmann::json::parse(second.out)["inputs"]) {
    EXPECT_EQ(input["inserted"], 0);
  }

  std::ofstream(dir / "bad.jsonl") << "{\"table\": \"nope\", \"row\": {}}\n";
  auto bad = run_mblast(with_kb(dir, {"kb", "import", (dir / "bad.jsonl").string()}, "b.sqlite"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("line 1"), std::string::npos) << bad.err;
}

TEST(Cli, CorruptKbExitsTwoAndNamesTheFile) {
  TempDir dir;
  std::ofstream(dir / "kb.sqlite") << std::string(4096, 'z');
  auto result = run_mblast(with_kb(dir, {"kb", "stats"}));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find((dir / "kb.sqlite").string()), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("fix:"), std::string::npos);
}

TEST(Cli, AReadOnlyKbCanBeQueried) {
  TempDir dir;
  auto path = dir / "kb.sqlite";
  ASSERT_EQ(run_mblast(with_kb(dir, {"kb", "init"})).exit_code, 0);
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);  // others may enter
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::group_read |
                                         std::filesystem::perms::others_read);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"kb", "query", "--kind", "states", "--json"},
        std::vector<std::string>{"kb", "stats"}, std::vector<std::string>{"kb", "export"}}) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--kb", path.string()});
    const auto result = run_mblast_unprivileged(full, dir.path());
    if (!result) GTEST_SKIP() << "running as root and setpriv (util-linux) is missing";
    EXPECT_EQ(result->exit_code, 0) << args[1] << ": " << result->err;
    EXPECT_FALSE(result->out.empty()) << args[1];
  }
}

TEST(Cli, ReadOnlyKbExitsTwoWithAClearMessage) {
  TempDir dir;
  auto path = dir / "kb.sqlite";
  ASSERT_EQ(run_mblast(with_kb(dir, {"kb", "init"})).exit_code, 0);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::group_read |
                                         std::filesystem::perms::others_read);
  std::ofstream(dir / "rows.jsonl")
      << "{\"table\":\"runs\",\"row\":{\"id\":\"r1\",\"task\":\"t\",\"backend\":\"cuda\","
         "\"hardware\":\"h\",\"started_at\":\"2026-01-01T00:00:00.000Z\"}}\n";
  std::vector<std::string> args = {"kb", "import", (dir / "rows.jsonl").string(), "--kb",
                                   path.string()};
  const auto result = run_mblast_unprivileged(args, dir.path());
  if (!result) GTEST_SKIP() << "running as root and setpriv (util-linux) is missing";
  EXPECT_EQ(result->exit_code, 2) << result->err;
  EXPECT_NE(result->err.find(path.string()), std::string::npos) << result->err;
  EXPECT_NE(result->err.find("fix:"), std::string::npos) << result->err;
}

}  // namespace
}  // namespace mblast
