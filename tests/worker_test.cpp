#include "cuda/worker_pool.hpp"

#include "backend_registry.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/compile_cache.hpp"
#include "cuda/cuda_eval.hpp"
#include "cuda/primer.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/python.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::no_children_left;
using testing::process_gone;
using testing::seconds_since;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using std::chrono::seconds;

WorkerConfig fake_config(const fs::path& scratch_root) {
  WorkerConfig config;
  config.python = "/usr/bin/python3";
  config.worker_dir = fs::path(MBLAST_SOURCE_DIR) / "tests" / "fixtures" / "fake_worker";
  config.scratch_root = scratch_root;
  config.start_timeout = seconds(30);
  return config;
}

bool is_empty_dir(const fs::path& dir) { return fs::is_empty(dir); }

TEST(WorkerTest, AnswersARequest) {
  testing::TempDir scratch;
  {
    WorkerPool pool(fake_config(scratch.path()));
    const json request = {{"op", "echo"}, {"payload", {1, 2, 3}}, {"text", "a\nb \"q\""}};
    const WorkerOutcome outcome = pool.call(request, seconds(30));
    ASSERT_TRUE(outcome.completed) << outcome.failure << "\n" << outcome.stderr_tail;
    EXPECT_EQ(outcome.failure, "");
    EXPECT_EQ(outcome.response, json({{"echo", request}}));
    EXPECT_EQ(outcome.ready.value("ready", false), true);
    EXPECT_EQ(outcome.ready.value("device", ""), "cpu");
    EXPECT_EQ(outcome.sandbox, pool.sandbox());
    EXPECT_GT(outcome.seconds, 0.0);
    std::cout << "sandbox: " << outcome.sandbox << "\n";
  }
  EXPECT_TRUE(is_empty_dir(scratch.path()));  // the unused pre-started worker's dir too
  EXPECT_TRUE(no_children_left());
}

TEST(WorkerTest, PrestartedWorkerHidesStartup) {
  testing::TempDir scratch;
  WorkerConfig config = fake_config(scratch.path());
  config.env["FAKE_WORKER_START_DELAY"] = "1";
  WorkerPool pool(config, 1);
  auto start = Clock::now();
  ASSERT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);
  const double first = seconds_since(start);
  EXPECT_GE(first, 0.9);

  start = Clock::now();
  const WorkerOutcome second = pool.call({{"op", "echo"}}, seconds(30));
  ASSERT_TRUE(second.completed) << second.failure;
  EXPECT_LT(seconds_since(start), 0.5) << "the first call took " << first << " s";
}

TEST(WorkerTest, StartsNoWorkerAheadOnceToldNotTo) {
  testing::TempDir scratch;
  testing::TempDir logs;
  const fs::path log = logs.path() / "starts.log";
  WorkerConfig config = fake_config(scratch.path());
  config.env["FAKE_WORKER_START_LOG"] = log.string();
  config.isolate_network = false;  // the workers write their log outside their folder
  auto starts = [&] {
    std::ifstream in(log);
    return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  };
  {
    WorkerPool pool(config, 1);
    ASSERT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);  // a replacement starts
    pool.set_prestarted(0);
    ASSERT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);  // takes it; no new one
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(starts(), 2);
}

// A call that finds its worker still starting raises how many are kept ahead, within the
// growth limit; a pool without one never grows.
TEST(WorkerTest, ACallThatWaitedForItsWorkerKeepsMoreStartedAhead) {
  testing::TempDir scratch;
  WorkerConfig config = fake_config(scratch.path());
  config.env["FAKE_WORKER_START_DELAY"] = "1.5";
  WorkerPool growing(config, 1);
  growing.set_growth_limit(2);
  WorkerPool fixed(config, 1);
  ASSERT_TRUE(growing.call({{"op", "echo"}}, seconds(30)).completed);
  ASSERT_TRUE(fixed.call({{"op", "echo"}}, seconds(30)).completed);
  EXPECT_EQ(growing.prestarted(), 2u);
  EXPECT_EQ(fixed.prestarted(), 1u);
  ASSERT_TRUE(growing.call({{"op", "echo"}}, seconds(30)).completed);
  EXPECT_EQ(growing.prestarted(), 2u);  // the limit
}

TEST(WorkerTest, AWorkerThatNeverBecameReadyKeepsNoMoreStartedAhead) {
  testing::TempDir scratch;
  WorkerConfig config = fake_config(scratch.path());
  config.env["FAKE_WORKER_START_DELAY"] = "1.5";
  config.env["FAKE_WORKER_START_FAILS"] = "1";
  WorkerPool pool(config, 1);
  pool.set_growth_limit(3);
  const WorkerOutcome outcome = pool.call({{"op", "echo"}}, seconds(30));
  EXPECT_FALSE(outcome.completed);
  EXPECT_NE(outcome.failure.find("exit"), std::string::npos) << outcome.failure;
  EXPECT_EQ(pool.prestarted(), 1u);
}

// The process state letter of /proc/PID/stat ('T' when stopped), or '?' once it is gone.
char process_state(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

bool eventually(const std::function<bool()>& condition) {
  const auto until = Clock::now() + seconds(20);
  while (Clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

// Fake workers that append their pids to `log` as they start; no sandbox, so that the pids are
// as seen here and the workers may write outside their folder.
WorkerConfig logging_config(const fs::path& scratch_root, const fs::path& log) {
  WorkerConfig config = fake_config(scratch_root);
  config.env["FAKE_WORKER_START_LOG"] = log.string();
  config.isolate_network = false;
  return config;
}

// The fake worker's "timing" request: "timing" once `dir`/begin exists, "timed" once go does, the
// answer once done does.
json timing_request(const fs::path& dir) {
  return {{"op", "timing"},
          {"begin", (dir / "begin").string()},
          {"go", (dir / "go").string()},
          {"done", (dir / "done").string()}};
}

// A worker started while another one times its candidate is stopped until the timing is over,
// and its start deadline does not run meanwhile.
TEST(WorkerTest, PausesStartingWorkersWhileACandidateIsTimed) {
  testing::TempDir scratch;
  testing::TempDir files;
  const fs::path log = files.path() / "starts.log";
  WorkerPool pool(logging_config(scratch.path(), log), 1);
  const auto started_pids = [&] {
    std::ifstream in(log);
    std::vector<std::string> pids;
    for (std::string line; std::getline(in, line);) pids.push_back(line);
    return pids;
  };
  ASSERT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);
  const fs::path begin = files.path() / "begin";
  const fs::path go = files.path() / "go";
  const fs::path done = files.path() / "done";
  WorkerOutcome outcome;
  std::thread call([&] { outcome = pool.call(timing_request(files.path()), seconds(60)); });
  // Three workers have started (the spare of this call among them) before the timing begins.
  const bool all_started = eventually([&] { return started_pids().size() >= 3; });
  std::ofstream(begin.string()).put('\n');
  if (!all_started) {
    std::ofstream(go.string()).put('\n');
    std::ofstream(done.string()).put('\n');
    call.join();
    FAIL() << "no spare worker was started";
  }
  const auto stopped = [&] {
    std::vector<std::string> pids;
    for (const std::string& pid : started_pids()) {
      if (process_state(pid) == 'T') pids.push_back(pid);
    }
    return pids;
  };
  EXPECT_TRUE(eventually([&] { return stopped().size() == 1; })) << stopped().size() << " stopped";
  const std::vector<std::string> paused = stopped();
  std::ofstream(go.string()).put('\n');
  EXPECT_TRUE(eventually([&] { return stopped().empty(); }));
  std::ofstream(done.string()).put('\n');
  call.join();
  ASSERT_TRUE(outcome.completed) << outcome.failure << "\n" << outcome.stderr_tail;
  EXPECT_EQ(outcome.response, json({{"timed", true}}));
  ASSERT_EQ(paused.size(), 1U);
  EXPECT_NE(paused[0], std::to_string(outcome.ready.value("pid", 0)));  // not the timing worker
  const WorkerOutcome next = pool.call({{"op", "echo"}}, seconds(30));  // the spare answers
  EXPECT_TRUE(next.completed) << next.failure;
}

// A background call (a prebuild's prime) is paused while another call times its candidate, and
// stop_background kills it: its call returns at once, and later background calls are refused.
TEST(WorkerTest, PausesBackgroundCallsWhileACandidateIsTimedAndStopsThem) {
  testing::TempDir scratch;
  testing::TempDir files;
  const fs::path log = files.path() / "starts.log";
  WorkerPool pool(logging_config(scratch.path(), log), 1);
  WorkerOutcome background;
  const fs::path pid_file = files.path() / "background.pid";
  std::thread compile([&] {
    background = pool.call({{"op", "hang"}, {"pid_file", pid_file.string()}},
                           CallLimits::fixed(seconds(120)), {}, CallKind::background);
  });
  // Named by the worker that got the request: two workers may start at once, in either order.
  std::string background_pid;
  ASSERT_TRUE(eventually([&] {
    std::ifstream in(pid_file);
    return std::getline(in, background_pid) && !background_pid.empty();
  }));
  const fs::path begin = files.path() / "begin";
  const fs::path go = files.path() / "go";
  const fs::path done = files.path() / "done";
  WorkerOutcome timed;
  std::thread call([&] { timed = pool.call(timing_request(files.path()), seconds(60)); });
  EXPECT_TRUE(eventually([&] { return process_state(background_pid) == 'S'; }));
  std::ofstream(begin.string()).put('\n');
  EXPECT_TRUE(eventually([&] { return process_state(background_pid) == 'T'; }))
      << "the background worker ran on during the timing: state " << process_state(background_pid);
  std::ofstream(go.string()).put('\n');
  EXPECT_TRUE(eventually([&] { return process_state(background_pid) != 'T'; }));
  std::ofstream(done.string()).put('\n');
  call.join();
  EXPECT_TRUE(timed.completed) << timed.failure;

  const auto stopping = Clock::now();
  pool.stop_background();
  compile.join();
  EXPECT_LT(seconds_since(stopping), 10.0);
  EXPECT_FALSE(background.completed);
  EXPECT_NE(background.failure.find("SIGKILL"), std::string::npos) << background.failure;
  const WorkerOutcome refused =
      pool.call({{"op", "echo"}}, CallLimits::fixed(seconds(30)), {}, CallKind::background);
  EXPECT_FALSE(refused.completed);
  EXPECT_EQ(refused.failure, "the pool stopped its background calls");
  EXPECT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);  // judged calls go on
}

// An evaluation ahead (primer.hpp): the worker holds after its candidate's first call and goes
// on when resumed, its limits counted from then: the hold is not the candidate's time.
TEST(WorkerTest, AHeldCallGoesOnWhenResumedWithItsLimitsFromThen) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()), 1);
  CallLimits limits;
  limits.total = seconds(2);
  WorkerPool::HeldCall held =
      pool.call_until_held({{"op", "hold"}, {"then_sleep", 0.5}}, limits, {});
  ASSERT_TRUE(WorkerPool::is_held(held));
  std::this_thread::sleep_for(seconds(3));  // longer than the total: only resumed time counts
  const WorkerOutcome outcome = pool.resume(std::move(held));
  ASSERT_TRUE(outcome.completed) << outcome.failure;
  EXPECT_EQ(outcome.response, json({{"resumed", true}}));
  EXPECT_LT(outcome.seconds, 2.0);
  EXPECT_EQ(outcome.eager_ms, 1.0);
}

TEST(WorkerTest, DroppingAHeldCallKillsItsWorker) {
  testing::TempDir scratch;
  testing::TempDir files;
  const fs::path pid_file = files.path() / "held.pid";
  {
    WorkerPool pool(logging_config(scratch.path(), files.path() / "starts.log"), 1);
    WorkerPool::HeldCall held = pool.call_until_held(
        {{"op", "hold"}, {"pid_file", pid_file.string()}}, CallLimits::fixed(seconds(30)));
    ASSERT_TRUE(WorkerPool::is_held(held));
    std::string pid;
    std::getline(std::ifstream(pid_file), pid);
    ASSERT_FALSE(pid.empty());
    EXPECT_FALSE(process_gone(std::stoi(pid)));
    held.reset();
    EXPECT_TRUE(process_gone(std::stoi(pid)));
    EXPECT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);
  }
  EXPECT_TRUE(no_children_left());
}

// A call that answers before any hold (a candidate failing its first call) keeps its answer; one
// killed while held (Primer::cancel) reports the kill.
TEST(WorkerTest, ACallThatEndsBeforeItsHoldOrIsKilledHeldSaysHow) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()), 1);
  WorkerPool::HeldCall answered =
      pool.call_until_held({{"op", "echo"}}, CallLimits::fixed(seconds(30)));
  EXPECT_FALSE(WorkerPool::is_held(answered));
  const WorkerOutcome echoed = pool.resume(std::move(answered));
  EXPECT_TRUE(echoed.completed) << echoed.failure;
  EXPECT_EQ(echoed.response["echo"]["op"], "echo");

  WorkerPool::HeldCall held =
      pool.call_until_held({{"op", "hold"}}, CallLimits::fixed(seconds(30)));
  ASSERT_TRUE(WorkerPool::is_held(held));
  pool.kill_background();
  const WorkerOutcome killed = pool.resume(std::move(held));
  EXPECT_FALSE(killed.completed);
  EXPECT_FALSE(killed.failure.empty());
}

// --prebuild's evaluation ahead: the held worker judges a later request of the same candidate text
// (at any path) and the same fields otherwise, once; another problem's request leaves it.
TEST(WorkerTest, APrimerHandsItsHeldWorkerToTheEvaluationOfTheSameText) {
  testing::TempDir scratch;
  testing::TempDir files;
  const fs::path guess = files.path() / "guess.py";
  const fs::path chosen = files.path() / "chosen.py";
  const fs::path other = files.path() / "other.py";
  std::ofstream(guess) << "same text";
  std::ofstream(chosen) << "same text";
  std::ofstream(other) << "other text";
  WorkerPool pool(fake_config(scratch.path()), 1);
  Primer primer(pool);
  const json request = {
      {"op", "hold"}, {"problem", "/p.py"}, {"candidate", guess.string()}, {"seeds", {1, 2}}};
  ASSERT_TRUE(primer.start(request, CallLimits::fixed(seconds(30)), {}, guess));
  json judged = request;
  judged["problem"] = "/another_problem.py";
  judged["candidate"] = other.string();
  EXPECT_FALSE(primer.take(judged, other));
  judged["problem"] = "/p.py";
  judged["candidate"] = chosen.string();
  judged["seeds"] = {1};
  EXPECT_FALSE(primer.take(judged, chosen));
  judged["seeds"] = {1, 2};
  const std::optional<WorkerOutcome> taken = primer.take(judged, chosen);
  ASSERT_TRUE(taken.has_value());
  EXPECT_TRUE(taken->completed) << taken->failure;
  EXPECT_EQ(taken->response, json({{"resumed", true}}));
  EXPECT_FALSE(primer.take(judged, chosen));  // once
}

// Candidate files of distinct texts, by name, and each one's hold request for problem /p.py.
class GuessFiles {
 public:
  explicit GuessFiles(std::initializer_list<std::string> names) {
    for (const std::string& name : names) {
      file_[name] = dir_.path() / (name + ".py");
      std::ofstream(file_[name]) << "text " << name;
    }
  }
  const fs::path& operator[](const std::string& name) const { return file_.at(name); }
  json request(const std::string& name) const {
    return json{{"op", "hold"}, {"problem", "/p.py"}, {"candidate", file_.at(name).string()}};
  }

 private:
  testing::TempDir dir_;
  std::map<std::string, fs::path> file_;
};

// The loop guesses step N+1 before step N is judged: the new guess waits until step N's
// evaluation takes the one ahead, or a later step judges another text of the problem (a wrong
// guess: killed); until then the step it was guessed in may judge other texts.
TEST(WorkerTest, AGuessWaitsForTheOneAheadToBeTakenOrFoundWrong) {
  testing::TempDir scratch;
  GuessFiles file({"a", "b", "c", "d"});
  {
    WorkerPool pool(fake_config(scratch.path()), 1);
    Primer primer(pool);
    const CallLimits limits = CallLimits::fixed(seconds(30));
    ASSERT_TRUE(primer.start(file.request("a"), limits, {}, file["a"], 1));  // guessed in step 1
    primer.begin_step("/p.py", 2);
    ASSERT_TRUE(primer.start(file.request("b"), limits, {}, file["b"], 2));  // pending
    const auto a = primer.take(file.request("a"), file["a"]);
    ASSERT_TRUE(a.has_value() && a->completed);
    primer.begin_step("/p.py", 3);
    ASSERT_TRUE(primer.start(file.request("c"), limits, {}, file["c"], 3));  // pending behind b
    EXPECT_FALSE(primer.take(file.request("d"), file["d"]));  // b was wrong: killed, c goes ahead
    const auto c = primer.take(file.request("c"), file["c"]);
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->completed) << c->failure;
    EXPECT_FALSE(primer.take(file.request("b"), file["b"]));
    // Guessed with nothing ahead: the evaluation of the step it was guessed in comes first.
    ASSERT_TRUE(primer.start(file.request("a"), limits, {}, file["a"], 3));
    EXPECT_FALSE(primer.take(file.request("d"), file["d"]));
    const auto again = primer.take(file.request("a"), file["a"]);
    ASSERT_TRUE(again.has_value());
    EXPECT_TRUE(again->completed) << again->failure;
  }
  EXPECT_TRUE(no_children_left());
}

// A step that judges several candidates (an LLM's fixes) keeps the guess made for the next step;
// the next step judging another text shows it wrong. Another problem's steps leave it.
TEST(WorkerTest, AGuessOutlivesTheFixesOfTheStepItWasGuessedIn) {
  testing::TempDir scratch;
  GuessFiles file({"guess", "first", "fix", "other"});
  {
    WorkerPool pool(fake_config(scratch.path()), 1);
    Primer primer(pool);
    const CallLimits limits = CallLimits::fixed(seconds(30));
    primer.begin_step("/p.py", 4);
    ASSERT_TRUE(primer.start(file.request("guess"), limits, {}, file["guess"], 4));
    EXPECT_FALSE(primer.take(file.request("first"), file["first"]));
    EXPECT_FALSE(primer.take(file.request("fix"), file["fix"]));
    primer.begin_step("/another.py", 9);
    primer.begin_step("/p.py", 5);
    const auto taken = primer.take(file.request("guess"), file["guess"]);
    ASSERT_TRUE(taken.has_value());
    EXPECT_TRUE(taken->completed) << taken->failure;

    ASSERT_TRUE(primer.start(file.request("guess"), limits, {}, file["guess"], 5));
    primer.begin_step("/p.py", 6);
    EXPECT_FALSE(primer.take(file.request("other"), file["other"]));  // wrong: killed
    EXPECT_FALSE(primer.take(file.request("guess"), file["guess"]));
  }
  EXPECT_TRUE(no_children_left());
}

TEST(WorkerTest, ACancelledEvaluationAheadIsJudgedAfresh) {
  testing::TempDir scratch;
  testing::TempDir files;
  const fs::path guess = files.path() / "guess.py";
  std::ofstream(guess) << "text";
  {
    WorkerPool pool(fake_config(scratch.path()), 1);
    Primer primer(pool);
    const json request = {{"op", "hold"}, {"candidate", guess.string()}};
    ASSERT_TRUE(primer.start(request, CallLimits::fixed(seconds(30)), {}, guess));
    ASSERT_TRUE(primer.start(request, CallLimits::fixed(seconds(30)), {}, guess));  // pending
    primer.cancel();
    EXPECT_FALSE(primer.take(request, guess));
    primer.stop();
    EXPECT_FALSE(primer.start(request, CallLimits::fixed(seconds(30)), {}, guess));
  }
  EXPECT_TRUE(no_children_left());
}

// End to end on the CPU with the real worker: a candidate evaluated ahead holds after its first
// call, and the evaluation of a file of the same text is judged by that worker.
TEST(EvaluateAhead, TheChosenCandidateIsJudgedByTheWorkerThatHeld) {
  const auto python = find_torch_python();
  if (!python) GTEST_SKIP() << "no Python with torch (apt-get install python3-torch)";
  testing::TempDir files;
  const std::string text = *read_file(testing::test_file("candidates/cpu/correct_relu.py"));
  const fs::path guess = files.path() / "guess.py";
  const fs::path chosen = files.path() / "chosen.py";
  std::ofstream(guess) << text;
  std::ofstream(chosen) << text;
  EvalOptions options;
  options.problem = testing::test_file("problems/relu_small.py");
  options.device = "cpu";
  options.cache_dir = files.path() / "cache";
  options.seeds = 2;
  options.timing_runs = 5;
  WorkerPool pool(eval_worker_config(options, *python), 1);
  Primer primer(pool);
  options.candidate = guess;
  ASSERT_TRUE(evaluate_ahead(options, pool, primer));
  const auto results = evaluate_all(options, {chosen, guess}, pool, false, &primer);
  EXPECT_EQ(results[0].value("correct", false), true) << results[0].dump(2);
  EXPECT_EQ(results[0]["candidate"], chosen.string());
  EXPECT_TRUE(results[0]["phase_seconds"].contains("trials/held")) << results[0]["phase_seconds"];
  EXPECT_EQ(results[1].value("correct", false), true);  // taken once: the second is judged afresh
  EXPECT_FALSE(results[1]["phase_seconds"].contains("trials/held"));
}

TEST(WorkerTest, ReportsACrashAndKeepsWorking) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  const WorkerOutcome crashed = pool.call({{"op", "crash"}}, seconds(30));
  EXPECT_FALSE(crashed.completed);
  EXPECT_EQ(crashed.failure, "worker crashed: killed by SIGSEGV (signal 11)");
  EXPECT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);
}

TEST(WorkerTest, KillsAHangingWorkerAtTheTimeout) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  const auto start = Clock::now();
  const WorkerOutcome outcome = pool.call({{"op", "hang"}}, seconds(1));
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_FALSE(outcome.completed);
  EXPECT_EQ(outcome.failure, "timed out after 1.0 s");
  EXPECT_GE(outcome.seconds, 1.0);

  const std::size_t mention = outcome.stderr_tail.find("grandchild ");
  ASSERT_NE(mention, std::string::npos) << outcome.stderr_tail;
  const pid_t grandchild = std::atoi(outcome.stderr_tail.c_str() + mention + 11);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(process_gone(grandchild));
  EXPECT_TRUE(process_gone(outcome.ready.value("pid", 0)));
  EXPECT_TRUE(pool.call({{"op", "echo"}}, seconds(30)).completed);
}

TEST(WorkerTest, CandidatePrintsGoToStderr) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  const WorkerOutcome outcome = pool.call({{"op", "print"}}, seconds(30));
  ASSERT_TRUE(outcome.completed) << outcome.failure;
  EXPECT_EQ(outcome.response, json({{"printed", true}}));
  EXPECT_NE(outcome.stderr_tail.find("garbage from the candidate"), std::string::npos);
}

TEST(WorkerTest, RunsInAFreshDirectoryWithoutSecrets) {
  testing::TempDir scratch;
  ::setenv("FOO_API_KEY", "sk-test-should-not-leak", 1);
  WorkerConfig config = fake_config(scratch.path());
  config.env["MBLAST_TEST_EXTRA"] = "extra";
  WorkerPool pool(config, 0);
  const WorkerOutcome outcome = pool.call({{"op", "env"}}, seconds(30));
  ::unsetenv("FOO_API_KEY");
  ASSERT_TRUE(outcome.completed) << outcome.failure;

  const json& env = outcome.response["env"];
  EXPECT_FALSE(env.contains("FOO_API_KEY"));
  EXPECT_EQ(outcome.response.dump().find("should-not-leak"), std::string::npos);
  EXPECT_EQ(env.value("PYTHONUNBUFFERED", ""), "1");
  EXPECT_EQ(env.value("PYTHONDONTWRITEBYTECODE", ""), "1");
  EXPECT_EQ(env.value("MBLAST_DEVICE", ""), "cpu");
  EXPECT_EQ(env.value("MBLAST_TEST_EXTRA", ""), "extra");

  const fs::path cwd = outcome.response.value("cwd", "");
  EXPECT_EQ(cwd.parent_path(), fs::canonical(scratch.path()));
  EXPECT_EQ(env.value("TMPDIR", ""), cwd.string());
  EXPECT_EQ(env.value("HOME", ""), cwd.string());
  // The compile caches: mounted at one path for every worker where the pool shares them (bwrap),
  // else below the worker's own folder.
  const fs::path caches =
      pool.shares_compile_cache() ? compile_cache_mount_point() : cwd / "compile-cache";
  EXPECT_EQ(env.value("TORCHINDUCTOR_CACHE_DIR", ""), (caches / "inductor").string());
  EXPECT_EQ(env.value("TRITON_CACHE_DIR", ""), (caches / "triton").string());
  EXPECT_FALSE(fs::exists(cwd));
  EXPECT_TRUE(is_empty_dir(scratch.path()));
}

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A worker starts from the problem's compile cache, a copy of its own; what it compiles joins
// the shared folder only when the call says its candidate is trusted.
TEST(WorkerTest, StartsFromTheCompileCacheAndKeepsOnlyATrustedCandidatesAdditions) {
  testing::TempDir scratch;
  testing::TempDir shared;
  write_text(shared / "triton" / "k1" / "kernel.cubin", "from an earlier built-in");
  WorkerPool pool(fake_config(scratch.path()), 0);
  if (!pool.shares_compile_cache()) {
    const WorkerOutcome alone = pool.call({{"op", "compile_cache"}, {"write", "k2/kernel.cubin"}},
                                          CallLimits::fixed(seconds(30)), {shared.path(), true});
    ASSERT_TRUE(alone.completed) << alone.failure << alone.stderr_tail;
    EXPECT_EQ(alone.response["seen"], json::array());
    EXPECT_EQ(alone.compile_cache_in_bytes + alone.compile_cache_kept_bytes, 0u);
    EXPECT_FALSE(fs::exists(shared / "triton" / "k2"));
    GTEST_SKIP() << "sandbox " << pool.sandbox() << ": compile caches are not shared";
  }

  const WorkerOutcome untrusted = pool.call({{"op", "compile_cache"}, {"write", "k2/kernel.cubin"}},
                                            CallLimits::fixed(seconds(30)), {shared.path(), false});
  ASSERT_TRUE(untrusted.completed) << untrusted.failure << untrusted.stderr_tail;
  EXPECT_EQ(untrusted.response["seen"], json::array({"triton/k1/kernel.cubin"}));
  EXPECT_FALSE(fs::exists(shared / "triton" / "k2" / "kernel.cubin"));
  EXPECT_EQ(untrusted.compile_cache_in_bytes, 24u);
  EXPECT_EQ(untrusted.compile_cache_kept_bytes, 0u);

  const WorkerOutcome trusted = pool.call({{"op", "compile_cache"}, {"write", "k3/kernel.cubin"}},
                                          CallLimits::fixed(seconds(30)), {shared.path(), true});
  ASSERT_TRUE(trusted.completed) << trusted.failure << trusted.stderr_tail;
  EXPECT_TRUE(fs::exists(shared / "triton" / "k3" / "kernel.cubin"));
  EXPECT_EQ(trusted.compile_cache_kept_bytes, 8u);  // "compiled"; the copied-in file was there
  EXPECT_EQ(std::ifstream(shared / "triton" / "k1" / "kernel.cubin").get(), 'f');  // kept as it was

  // Inductor's entries name files by absolute path: every worker sees its copy at one path, and
  // what it writes there stays in its own scratch folder, never in the mount point on the host.
  const fs::path at = compile_cache_mount_point();
  EXPECT_EQ(untrusted.response["inductor_dir"], (at / "inductor").string());
  EXPECT_EQ(trusted.response["inductor_dir"], (at / "inductor").string());
  EXPECT_TRUE(is_empty_dir(at));

  const WorkerOutcome without = pool.call({{"op", "compile_cache"}, {"write", "k4/kernel.cubin"}},
                                          CallLimits::fixed(seconds(30)));
  ASSERT_TRUE(without.completed) << without.failure;
  EXPECT_EQ(without.response["seen"], json::array());
  EXPECT_TRUE(is_empty_dir(scratch.path()));
}

class Listener {
 public:
  Listener() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    if (::bind(fd_, generic, size) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, generic, &size) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST(WorkerTest, HasNoNetworkWhenSandboxed) {
  testing::TempDir scratch;
  const Listener listener;
  WorkerPool pool(fake_config(scratch.path()));
  const WorkerOutcome outcome = pool.call({{"op", "net"}, {"port", listener.port()}}, seconds(30));
  ASSERT_TRUE(outcome.completed) << outcome.failure;
  if (outcome.sandbox == "none") {
    EXPECT_TRUE(outcome.response.value("connected", false)) << "the probe itself is broken";
    GTEST_SKIP() << "no network isolation available here";
  }
  EXPECT_FALSE(outcome.response.value("connected", true)) << outcome.response.dump();

  WorkerConfig open = fake_config(scratch.path());
  open.isolate_network = false;
  WorkerPool unsandboxed(open, 0);
  const WorkerOutcome direct =
      unsandboxed.call({{"op", "net"}, {"port", listener.port()}}, seconds(30));
  EXPECT_EQ(direct.sandbox, "none");
  EXPECT_TRUE(direct.response.value("connected", false)) << direct.response.dump();
}

TEST(WorkerTest, ReportsProtocolFailures) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  const WorkerOutcome exited = pool.call({{"op", "exit"}}, seconds(30));
  EXPECT_FALSE(exited.completed);
  EXPECT_EQ(exited.failure, "worker exited (exit 3) before answering");

  const WorkerOutcome garbled = pool.call({{"op", "bad_json"}}, seconds(30));
  EXPECT_FALSE(garbled.completed);
  EXPECT_TRUE(garbled.failure.starts_with("worker sent invalid JSON: this is not JSON"))
      << garbled.failure;

  WorkerConfig broken = fake_config(scratch.path());
  broken.worker_dir = scratch.path() / "nothing-here";
  WorkerPool no_module(broken, 0);
  const WorkerOutcome missing = no_module.call({{"op", "echo"}}, seconds(30));
  EXPECT_EQ(missing.failure, "worker exited (exit 1) before it was ready");
  EXPECT_NE(missing.stderr_tail.find("No module named mblast_worker"), std::string::npos)
      << missing.stderr_tail;
}

TEST(WorkerTest, MissingPythonThrows) {
  testing::TempDir scratch;
  WorkerConfig config = fake_config(scratch.path());
  config.python = "/nonexistent/python3";
  EXPECT_THROW(WorkerPool(config, 1), Error);
}

TEST(WorkerTest, ServesConcurrentCalls) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()), 2);
  std::vector<std::thread> threads;
  std::vector<int> completed(4, 0);
  for (std::size_t i = 0; i < completed.size(); ++i) {
    threads.emplace_back([&, i] {
      const WorkerOutcome outcome = pool.call({{"op", "echo"}, {"i", i}}, seconds(30));
      completed[i] = outcome.completed && outcome.response["echo"]["i"] == i ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const int done : completed) EXPECT_EQ(done, 1);
}

// The limits follow the worker's progress: after "primed", a minute-like base plus a multiple of
// the eager time the worker reported; before it, the compile allowance.
TEST(WorkerTest, ACandidatesLimitFollowsTheReferencesTime) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  CallLimits limits;
  limits.base = seconds(1);
  limits.per_eager = 1000;  // x 1 ms of eager: one more second
  limits.compile = seconds(30);
  const auto start = Clock::now();
  const WorkerOutcome slow = pool.call({{"op", "progress"}, {"eager_ms", 1.0}}, limits);
  EXPECT_FALSE(slow.completed);
  EXPECT_GE(seconds_since(start), 2.0);
  EXPECT_LT(seconds_since(start), 10.0);
  ASSERT_TRUE(slow.eager_ms.has_value());
  EXPECT_DOUBLE_EQ(*slow.eager_ms, 1.0);
  EXPECT_NE(slow.failure.find("timed out after"), std::string::npos) << slow.failure;
  EXPECT_NE(slow.failure.find("the candidate's limit (1 s + 1000 x eager's 1 ms)"),
            std::string::npos)
      << slow.failure;

  const WorkerOutcome quick =
      pool.call({{"op", "progress"}, {"eager_ms", 1.0}, {"then_sleep", 0.2}}, limits);
  EXPECT_TRUE(quick.completed) << quick.failure;
  EXPECT_EQ(quick.response, json({{"done", true}}));
}

TEST(WorkerTest, TheCompileAllowanceAndTheRunsDeadlineEndARequest) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  CallLimits limits;
  limits.compile = seconds(1);
  const WorkerOutcome compiling = pool.call({{"op", "progress"}, {"hang_in", "compile"}}, limits);
  EXPECT_FALSE(compiling.completed);
  EXPECT_NE(compiling.failure.find("the compile allowance (1.0 s)"), std::string::npos)
      << compiling.failure;

  CallLimits run_deadline;
  run_deadline.until = Clock::now() + std::chrono::milliseconds(1500);
  const WorkerOutcome stopped = pool.call({{"op", "progress"}, {"eager_ms", 1.0}}, run_deadline);
  EXPECT_FALSE(stopped.completed);
  EXPECT_EQ(stopped.limit, "the run's --time-limit");
}

// A further workload of the request restarts the compile allowance (its shapes may compile again)
// and brings its own eager time; a worker that dies there says which workload it was judging.
TEST(WorkerTest, AFurtherWorkloadGetsItsOwnCompileAllowance) {
  testing::TempDir scratch;
  WorkerPool pool(fake_config(scratch.path()));
  CallLimits limits;
  limits.base = seconds(30);
  limits.compile = seconds(1);
  const WorkerOutcome outcome =
      pool.call({{"op", "progress"}, {"eager_ms", 1.0}, {"next_workload_eager_ms", 2.5}}, limits);
  EXPECT_FALSE(outcome.completed);
  EXPECT_NE(outcome.failure.find("the compile allowance (1.0 s)"), std::string::npos)
      << outcome.failure;
  EXPECT_EQ(outcome.workload, 1);
  ASSERT_TRUE(outcome.eager_ms.has_value());
  EXPECT_DOUBLE_EQ(*outcome.eager_ms, 2.5);
}

TEST(WorkerTest, LeavesNoZombies) {
  testing::TempDir scratch;
  {
    WorkerPool pool(fake_config(scratch.path()), 2);
    pool.call({{"op", "crash"}}, seconds(30));
    pool.call({{"op", "hang"}}, seconds(1));
    pool.call({{"op", "echo"}}, seconds(30));
  }
  EXPECT_TRUE(no_children_left());
  EXPECT_TRUE(is_empty_dir(scratch.path()));
}

// The loop runs host work (the built-ins' check) beside judging only where the GPU does the
// judging's work; on a CPU device candidates and their timing run on the host's own cores.
TEST(CudaBackend, OnlyAGpuDeviceLeavesTheHostIdleWhileJudging) {
  auto idle = [](const std::string& device) {
    EvalOptions options;
    options.backend = "cuda";
    options.device = device;
    options.problem = "/problems/p.py";
    return backend_row("cuda")
        .make(BackendContext{options, "/usr/bin/python3"})
        ->host_idle_while_judging();
  };
  EXPECT_TRUE(idle("cuda"));
  EXPECT_TRUE(idle("cuda:1"));
  EXPECT_FALSE(idle("cpu"));
}

}  // namespace
}  // namespace mblast
