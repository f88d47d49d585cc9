// `mblast optimize --device cpu` end to end: the real binary, the embedded worker, Debian's
// PyTorch, a real SQLite KB, and LLM answers from authored replay cassettes (no network).
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "mblast/child.hpp"
#include "mblast/kb.hpp"
#include "mblast/python.hpp"
#include "mblast/support.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::run_mblast;
using testing::TempDir;
using testing::test_file;

std::vector<nlohmann::json> json_lines(const fs::path& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

class OptimizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_torch_python())
      GTEST_SKIP() << "no Python with torch (apt-get install python3-torch)";
  }

  // No LLM unless the test passes --llm: keys and MBLAST_LLM of the machine are ignored.
  std::map<std::string, std::optional<std::string>> env() const {
    return testing::no_llm_env(dir_.path());
  }

  std::vector<std::string> args(const std::string& problem, const fs::path& out,
                                std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"--kb",        kb().string(),
                                  "optimize",    test_file(problem),
                                  "--device",    "cpu",
                                  "--out",       out.string(),
                                  "--seeds",     "2",
                                  "--runs",      "5",
                                  "--cache-dir", (dir_ / "cache").string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  fs::path kb() const { return dir_ / "kb.sqlite"; }

  // A run whose one candidate never returns, under a 0.5-minute --time-limit: the evaluation in
  // flight is stopped and the run ends with status budget well before the candidate's own limit.
  void run_into_the_time_limit(const fs::path& out,
                               const std::map<std::string, std::optional<std::string>>& env) {
    const auto started = std::chrono::steady_clock::now();
    const auto result =
        run_mblast(args("problems/relu_small.py", out,
                        {"--iterations", "1", "--steps", "1", "--technique",
                         "cuda/fuse-elementwise-into-producer", "--llm",
                         "replay:" + test_file("fixtures/optimize/relu_actor_hangs.jsonl"),
                         "--time-limit", "0.5", "--json"}),
                   env);
    const double seconds = seconds_since(started);
    ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
    const auto summary = nlohmann::json::parse(result.out);
    EXPECT_EQ(summary["status"], "budget");
    EXPECT_NE(summary.dump().find("evaluation in flight was stopped"), std::string::npos)
        << summary.dump();
    EXPECT_LT(seconds, 55.0);  // the candidate's own limit would be a minute and more
  }

  TempDir dir_;
};

TEST_F(OptimizeCli, ReplayDrivesActorCompileErrorFixCriticIntoTheKb) {
  const fs::path out = dir_ / "run";
  const auto result = run_mblast(
      args("problems/relu_small.py", out,
           {"--iterations", "1", "--steps", "1", "--technique",
            "cuda/fuse-elementwise-into-producer", "--llm",
            "replay:" + test_file("fixtures/optimize/relu_actor_fix_critic.jsonl"), "--json"}),
      env());
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["status"], "finished");
  EXPECT_TRUE(summary["correct"].get<bool>());
  EXPECT_EQ(summary["evaluations"], 3);  // the reference, the broken candidate, its fix
  EXPECT_EQ(summary["tokens"], 1200 + 90 + 900 + 80 + 700 + 60);
  EXPECT_NE(result.err.find("no live LLM"), std::string::npos) << result.err;

  const auto steps = json_lines(out / "steps.jsonl");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["fixes"], 1);
  EXPECT_EQ(steps[0]["candidates"][0]["outcome"], "compile_error");
  EXPECT_EQ(steps[0]["outcome"], "correct");
  EXPECT_EQ(steps[0]["critic"], "llm");

  KnowledgeBase store(kb());
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto attempts = store.query({.kind = "attempts", .task = "problems/relu_small"});
  ASSERT_EQ(attempts.size(), 2u);
  std::multiset<std::string> outcomes;
  for (const auto& a : attempts) outcomes.insert(a["outcome"].get<std::string>());
  EXPECT_EQ(outcomes, (std::multiset<std::string>{"compile_error", "correct"}));
  const auto claims = store.claims("", "cuda/fuse-elementwise-into-producer");
  ASSERT_FALSE(claims.empty());
  EXPECT_NE(claims[0].text.find("clamp_min"), std::string::npos);
  EXPECT_EQ(claims[0].support, 1);
  // A verified implementation is stored when it beats the best so far, the reference at first
  // (the fixed ReLU runs about as fast as the reference here: either way, stored when it won).
  const auto implementations = store.query({.kind = "implementations"});
  EXPECT_EQ(implementations.size(), steps[0]["new_best_candidate"].get<bool>() ? 1u : 0u);
  EXPECT_TRUE(fs::is_regular_file(out / "best.py"));
  EXPECT_TRUE(fs::is_regular_file(out / "best_kernelbench.py"));
  EXPECT_TRUE(fs::is_regular_file(out / "log.txt"));

  // Only mblast's own code over the problem (the reference, built-ins) adds to the problem's
  // compile cache; the LLM's candidates only read it.
  std::map<std::string, bool> trusted;  // candidate stem -> compile_cache.trusted
  for (const auto& entry : fs::directory_iterator(out / "candidates")) {
    if (entry.path().extension() != ".json") continue;
    const auto judged = nlohmann::json::parse(std::ifstream(entry.path()));
    if (judged.contains("compile_cache"))
      trusted[entry.path().stem().string()] = judged["compile_cache"]["trusted"].get<bool>();
  }
  ASSERT_EQ(trusted.size(), 3u);  // the reference, the broken candidate, its fix
  for (const auto& [stem, is_trusted] : trusted)
    EXPECT_EQ(is_trusted, stem.rfind("reference", 0) == 0) << stem;
}

double number_after(const std::string& text, const std::string& label) {
  const auto at = text.find(label);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(text.find_first_of("0123456789", at + label.size())));
}

TEST_F(OptimizeCli, WithoutAnLlmItSaysSoAndTriesBuiltInsOnly) {
  const fs::path out = dir_ / "run";
  auto verbose =
      args("problems/conv_small.py", out, {"--iterations", "1", "--steps", "1", "--json"});
  verbose.insert(verbose.begin(), "-v");
  const auto result = run_mblast(verbose, env());
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  EXPECT_NE(result.err.find("built-in techniques only"), std::string::npos) << result.err;
  // The start and the reference's evaluation, as the progress lines print them.
  EXPECT_NE(result.err.find("\n  run dir " + fs::absolute(out).string()), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("\n  llm     none"), std::string::npos) << result.err;
  const auto baseline = result.err.find("\n  baseline eager ");
  ASSERT_NE(baseline, std::string::npos) << result.err;
  EXPECT_GT(number_after(result.err.substr(baseline), "eager"), 0.0) << result.err;
  EXPECT_NE(result.err.find("; slots: model", baseline), std::string::npos) << result.err;
  // -v: the selectors' view of each step (slot, state with evidence, the arms' scores).
  EXPECT_NE(result.err.find("[debug] step 1: slot model, state "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("[debug] step 1:   arm "), std::string::npos) << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  for (const char* field :
       {"best_speedup", "correct", "evaluations", "run_dir", "tokens", "cost_usd"}) {
    EXPECT_TRUE(summary.contains(field)) << field;
  }
  EXPECT_EQ(summary["tokens"], 0);
  EXPECT_EQ(summary["run_dir"], fs::absolute(out).string());
  const auto steps = json_lines(out / "steps.jsonl");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["implementer"], "builtin");
  const auto config = nlohmann::json::parse(std::ifstream(out / "config.json"));
  EXPECT_EQ(config["options"]["device"], "cpu");
  EXPECT_FALSE(config.value("hardware", "").empty());
  EXPECT_FALSE(config["baseline"]["torch_version"].is_null());
  // Each evaluation profiles its candidate only: the first state comes from the reference judged
  // as a candidate, and a profile of the reference beside every candidate costs seconds per step.
  int judged = 0;
  for (const auto& entry : fs::directory_iterator(out / "candidates")) {
    if (entry.path().extension() != ".json") continue;
    const auto judged_json = nlohmann::json::parse(std::ifstream(entry.path()));
    EXPECT_TRUE(judged_json["signature"].is_object()) << entry.path();
    EXPECT_TRUE(judged_json.value("reference_signature", nlohmann::json()).is_null())
        << entry.path();
    // A built-in over the problem is mblast's own code: its compile caches are kept.
    EXPECT_TRUE(judged_json["compile_cache"]["trusted"].get<bool>()) << entry.path();
    ++judged;
  }
  EXPECT_EQ(judged, 2);  // the reference and step 1's candidate
}

TEST_F(OptimizeCli, EveryFigureOfTheBestAgreesWhereverItIsShown) {
  const fs::path out = dir_ / "run";
  const auto result =
      run_mblast(args("problems/conv_small.py", out, {"--iterations", "1", "--steps", "2"}), env());
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto run = nlohmann::json::parse(std::ifstream(out / "run.json"));
  const double best = run["best_speedup"].get<double>();
  // The printed pair is the one the speedup divides (eager beside the best, the best's time).
  const double eager = number_after(result.out, "eager time");
  const double best_ms = number_after(result.out, "best time");
  ASSERT_GT(eager, 0) << result.out;
  ASSERT_GT(best_ms, 0) << result.out;
  EXPECT_NEAR(eager / best_ms, best, best * 0.002) << result.out;  // four printed decimals
  EXPECT_NEAR(number_after(result.out, "best speedup"), best, 0.0006) << result.out;
  EXPECT_NEAR(run["best_eager_ms"].get<double>() / run["best_ms"].get<double>(), best, 1e-9);
  // Each step's speedup is the one of its candidate's judged result and of its KB attempt.
  KnowledgeBase store(kb());
  const auto attempts = store.query({.kind = "attempts"});
  for (const auto& step : json_lines(out / "steps.jsonl")) {
    if (!step["speedup"].is_number()) continue;
    const auto stored = nlohmann::json::parse(std::ifstream(
        (out / "candidates" / step["candidate"].get<std::string>()).replace_extension(".json")));
    EXPECT_DOUBLE_EQ(step["speedup"].get<double>(), stored["speedup"].get<double>());
    const auto attempt =
        std::find_if(attempts.begin(), attempts.end(),
                     [&](const nlohmann::json& a) { return a["id"] == step["attempt_id"]; });
    ASSERT_NE(attempt, attempts.end());
    EXPECT_DOUBLE_EQ((*attempt)["speedup"].get<double>(), step["speedup"].get<double>());
  }
}

TEST_F(OptimizeCli, KillNineThenResumeFinishesWithoutRepeatingAnEvaluation) {
  const fs::path out = dir_ / "run";
  {
    ProcessSpec spec;
    spec.argv = {testing::mblast_binary()};
    const auto a = args("problems/conv_small.py", out, {"--iterations", "2", "--steps", "3"});
    spec.argv.insert(spec.argv.end(), a.begin(), a.end());
    spec.env = env();
    Child child(spec);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (json_lines(out / "steps.jsonl").empty() && std::chrono::steady_clock::now() < deadline &&
           !child.exited()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(child.exited()) << "the run ended before it could be killed: "
                                 << child.stderr_tail();
    child.kill();  // SIGKILL to the whole process group, worker included
  }
  const auto before = json_lines(out / "steps.jsonl").size();
  EXPECT_FALSE(fs::exists(out / "run.json"));  // it never got to finish

  const auto resumed =
      run_mblast({"--kb", kb().string(), "optimize", "--resume", out.string(), "--json"}, env());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming after step " + std::to_string(before)), std::string::npos)
      << resumed.err;
  const auto summary = nlohmann::json::parse(resumed.out);
  EXPECT_NE(summary["status"], "interrupted");

  const auto steps = json_lines(out / "steps.jsonl");
  EXPECT_EQ(static_cast<int>(steps.size()), summary["steps"].get<int>());
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i]["global_step"], i + 1);
  std::set<std::string> judged;
  for (const auto& evaluation : json_lines(out / "evaluations.jsonl")) {
    EXPECT_TRUE(judged.insert(evaluation["candidate"].get<std::string>()).second)
        << "judged twice: " << evaluation["candidate"];
  }
  EXPECT_EQ(static_cast<int>(judged.size()), summary["evaluations"].get<int>());

  KnowledgeBase store(kb());
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto attempts = store.query({.kind = "attempts", .task = "problems/conv_small"});
  EXPECT_EQ(attempts.size(), steps.size());  // no step recorded twice, none lost
}

TEST_F(OptimizeCli, BudgetEndsTheRunCleanlyAndResumeCanRaiseIt) {
  const fs::path out = dir_ / "run";
  auto first =
      run_mblast(args("problems/conv_small.py", out, {"--max-evaluations", "2", "--json"}), env());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto summary = nlohmann::json::parse(first.out);
  EXPECT_EQ(summary["status"], "budget");
  EXPECT_EQ(summary["evaluations"], 2);
  // The reference's evaluation and one step's; built-ins that change nothing (sibling merge,
  // batch-norm folding in training mode) are steps without one.
  int evaluated = 0;
  for (const auto& step : json_lines(out / "steps.jsonl"))
    evaluated += step["outcome"] != "skipped";
  EXPECT_EQ(evaluated, 1);
  EXPECT_TRUE(fs::is_regular_file(out / "run.json"));

  auto more = run_mblast({"--kb", kb().string(), "optimize", "--resume", out.string(),
                          "--max-evaluations", "3", "--json"},
                         env());
  ASSERT_EQ(more.exit_code, 0) << more.err;
  summary = nlohmann::json::parse(more.out);
  EXPECT_EQ(summary["evaluations"], 3);
  // One more evaluation; a built-in that changes nothing (sibling merge on a model without
  // siblings) is a step without one.
  EXPECT_GE(summary["steps"].get<int>(), 2);
  EXPECT_EQ(summary["steps"].get<std::size_t>(), json_lines(out / "steps.jsonl").size());
}

// The run's --time-limit stops the evaluation in flight (a candidate that never returns), ends
// the run with status budget well before the candidate's own limit, and records no attempt for
// it: a resumed run judges it again.
TEST_F(OptimizeCli, TheTimeLimitStopsTheEvaluationInFlight) {
  run_into_the_time_limit(dir_ / "run", env());
  KnowledgeBase store(kb());
  EXPECT_TRUE(store.query({.kind = "attempts", .task = "problems/relu_small"}).empty());
  EXPECT_TRUE(testing::no_children_left());
}

// On a GPU the runs of a batch judge through the eval server (forced on for the CPU here with
// MBLAST_EVAL_SERVER=1), so that a run after the first finds its workers started; a run's time
// limit still stops the evaluation in flight there.
class OptimizeThroughServer : public OptimizeCli {
 protected:
  std::map<std::string, std::optional<std::string>> server_env() const {
    auto e = env();
    e["XDG_RUNTIME_DIR"] = (dir_ / "run-dir").string();
    e["MBLAST_EVAL_SERVER"] = "1";
    e["MBLAST_EVAL_SERVER_IDLE_S"] = "60";
    return e;
  }
  void SetUp() override {
    OptimizeCli::SetUp();
    fs::create_directories(dir_ / "run-dir");
    fs::permissions(dir_ / "run-dir", fs::perms::owner_all);
  }
  // The eval server's process and request number that judged the run's reference.
  static std::pair<int, int> served_reference(const fs::path& run) {
    for (const auto& entry : fs::directory_iterator(run / "candidates")) {
      const auto name = entry.path().filename().string();
      if (name.rfind("reference-", 0) != 0 || entry.path().extension() != ".json") continue;
      const auto result = nlohmann::json::parse(std::ifstream(entry.path()));
      const auto server = result.value("eval_server", nlohmann::json::object());
      return {server.value("pid", 0), server.value("request", 0)};
    }
    return {0, 0};
  }
};

TEST_F(OptimizeThroughServer, TheRunsOfABatchShareOneServer) {
  std::vector<std::pair<int, int>> served;
  for (const char* name : {"first", "second"}) {
    const auto result = run_mblast(
        args("problems/relu_small.py", dir_ / name, {"--max-evaluations", "1", "--json"}),
        server_env());
    ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
    served.push_back(served_reference(dir_ / name));
  }
  ASSERT_GT(served[0].first, 0) << "the first run was not judged by an eval server";
  EXPECT_EQ(served[1].first, served[0].first);
  EXPECT_GT(served[1].second, served[0].second);
  const auto local = run_mblast(args("problems/relu_small.py", dir_ / "local",
                                     {"--max-evaluations", "1", "--no-server", "--json"}),
                                server_env());
  ASSERT_EQ(local.exit_code, 0) << local.err << local.out;
  EXPECT_EQ(served_reference(dir_ / "local").first, 0);
  ::kill(served[0].first, SIGTERM);
}

TEST_F(OptimizeThroughServer, TheTimeLimitStopsTheEvaluationInFlight) {
  run_into_the_time_limit(dir_ / "run", server_env());
  const int server = served_reference(dir_ / "run").first;
  EXPECT_GT(server, 0) << "the run was not judged by an eval server";
  if (server > 0) ::kill(server, SIGTERM);
}

TEST_F(OptimizeCli, TheDemoReplayCarriesTheBundledExamplesAndFinishes) {
  const fs::path root = MBLAST_SOURCE_DIR;
  auto read = [](const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  // Counts a cassette's actor answers, each of which must carry one of `files` verbatim.
  auto actor_answers = [&](const fs::path& cassette, const std::vector<std::string>& files) {
    int actors = 0;
    for (const auto& line : json_lines(root / cassette)) {
      EXPECT_EQ(line["note"], "authored");
      if (line["match"]["role_tag"] != "actor") continue;
      ++actors;
      const std::string text = line["response"]["text"];
      EXPECT_TRUE(
          std::any_of(files.begin(), files.end(),
                      [&](const std::string& f) { return text.find(f) != std::string::npos; }))
          << "an actor answer of " << cassette
          << " no longer matches benchmarks/examples/: " << text.substr(0, 200);
    }
    return actors;
  };
  EXPECT_EQ(actor_answers("benchmarks/examples/row_softmax.cassette.jsonl",
                          {read(root / "benchmarks/examples/row_softmax_torch.py"),
                           read(root / "benchmarks/examples/row_softmax_cuda.py")}),
            6);
  // What scripts/demo.sh replays on a GPU machine.
  EXPECT_EQ(actor_answers("benchmarks/examples/gelu_tanh.cassette.jsonl",
                          {read(root / "benchmarks/examples/gelu_tanh_cuda.py")}),
            3);

  // What scripts/demo.sh runs on a machine without a GPU.
  const fs::path out = dir_ / "demo";
  const auto result =
      run_mblast({"--kb",
                  kb().string(),
                  "optimize",
                  (root / "benchmarks/problems/row_softmax.py").string(),
                  "--device",
                  "cpu",
                  "--llm",
                  "replay:" + (root / "benchmarks/examples/row_softmax.cassette.jsonl").string(),
                  "--iterations",
                  "1",
                  "--steps",
                  "3",
                  "--technique",
                  "cuda/online-softmax",
                  "--technique",
                  "cuda/builtin-cuda-graph",
                  "--technique",
                  "cuda/builtin-torch-compile",
                  "--technique",
                  "cuda/builtin-channels-last",
                  "--technique",
                  "cuda/builtin-cudnn-benchmark",
                  "--seeds",
                  "2",
                  "--runs",
                  "3",
                  "--out",
                  out.string(),
                  "--cache-dir",
                  (dir_ / "cache").string(),
                  "--json"},
                 env());
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["status"], "finished");
  EXPECT_EQ(summary["steps"], 3);
  EXPECT_EQ(result.err.find("[warning]"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("[info] critic"), std::string::npos) << result.err;
}

TEST_F(OptimizeCli, BadInputExitsTwoWithAFix) {
  const fs::path out = dir_ / "run";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::ofstream(dir_ / "not_a_run.txt") << "x";
  const std::vector<Case> cases = {
      {{"optimize", (dir_ / "missing.py").string(), "--device", "cpu"}, "no such problem file"},
      {{"optimize", "--resume", dir_.path().string()}, "holds no mblast run"},
      {args("problems/conv_small.py", out, {"--technique", "cuda/warp-drive"}),
       "no technique cuda/warp-drive"},
      {{"optimize", test_file("problems/broken_syntax.py"), "--device", "cpu", "--out",
        (dir_ / "b").string()},
       "broken_syntax.py"},
      {{"optimize"}, "no PROBLEM given"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> a = c.args;
    if (a[0] == "optimize") a.insert(a.begin(), {"--kb", kb().string()});
    const auto result = run_mblast(a, env());
    EXPECT_EQ(result.exit_code, 2) << c.says << "\n" << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("fix:"), std::string::npos) << result.err;
  }
  // None of them left a run directory behind.
  EXPECT_FALSE(fs::exists(out)) << "the unknown technique's --out";
  EXPECT_FALSE(fs::exists(dir_ / "b")) << "the broken problem's --out";
}

TEST_F(OptimizeCli, ResumeRefusesOptionsItCannotChange) {
  const fs::path out = dir_ / "run";
  const auto first =
      run_mblast(args("problems/conv_small.py", out, {"--iterations", "1", "--steps", "1"}), env());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto config_before = nlohmann::json::parse(std::ifstream(out / "config.json"));
  const auto refused = run_mblast({"--kb", kb().string(), "optimize", "--resume", out.string(),
                                   "--backend", "opencl", "--atol", "0.01", "--steps", "2"},
                                  env());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("these cannot change: --backend, --atol"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("fix:"), std::string::npos) << refused.err;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(out / "config.json")), config_before);
  EXPECT_EQ(json_lines(out / "steps.jsonl").size(), 1u);
  // The recorded values given again (as a batch script repeats its options) are no change.
  const auto same = run_mblast(
      {"--kb", kb().string(), "optimize", "--resume", out.string(), "--device", "cpu", "--seeds",
       "2", "--runs", "5", "--cache-dir", (dir_ / "cache").string(), "--steps", "2"},
      env());
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

TEST_F(OptimizeCli, ACorruptKbLeavesNoRunDirectory) {
  std::ofstream(dir_ / "corrupt.sqlite") << std::string(4096, 'x');
  const fs::path out = dir_ / "run";
  auto a = args("problems/conv_small.py", out);
  a[1] = (dir_ / "corrupt.sqlite").string();  // --kb
  const auto result = run_mblast(a, env());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("fix:"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace mblast
