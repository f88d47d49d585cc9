#include "mblast/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mblast/error.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::no_children_left;
using testing::process_gone;

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", script};
  spec.timeout = std::chrono::seconds(30);
  return spec;
}

TEST(ProcessTest, ReportsExitCodes) {
  const ProcessResult ok = run_process(shell("exit 0"));
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.exit_code, 0);

  const ProcessResult failed = run_process(shell("exit 3"));
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed.term_signal, 0);
  EXPECT_FALSE(failed.timed_out);
  EXPECT_EQ(failed.describe(), "exit 3");
  EXPECT_GT(failed.wall_seconds, 0.0);
}

TEST(ProcessTest, CapturesStdoutAndStderrSeparately) {
  const ProcessResult result = run_process(shell("echo out; echo err >&2; echo more"));
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.out, "out\nmore\n");
  EXPECT_EQ(result.err, "err\n");
  EXPECT_FALSE(result.output_truncated);
}

TEST(ProcessTest, RoundTripsLargeStdinThroughCat) {
  std::string input;
  input.reserve(3 << 20);
  unsigned state = 12345;
  while (input.size() < (3u << 20)) {
    state = state * 1103515245u + 12345u;
    input.push_back(static_cast<char>(state >> 24));  // every byte value, NUL included
  }
  ProcessSpec spec;
  spec.argv = {"cat"};
  spec.stdin_data = input;
  const ProcessResult result = run_process(spec);
  EXPECT_TRUE(result.ok()) << result.describe();
  EXPECT_EQ(result.out.size(), input.size());
  EXPECT_TRUE(result.out == input);
}

TEST(ProcessTest, SurvivesChildClosingStdinEarly) {
  ProcessSpec spec;
  spec.argv = {"head", "-c", "10"};
  spec.stdin_data = std::string(8 << 20, 'x');
  const ProcessResult result = run_process(spec);
  EXPECT_TRUE(result.ok()) << result.describe();
  EXPECT_EQ(result.out, std::string(10, 'x'));

  spec.argv = {"true"};
  EXPECT_TRUE(run_process(spec).ok());
}

TEST(ProcessTest, TimeoutKillsTheWholeGroup) {
  ProcessSpec spec = shell("sleep 100 & echo $!; sleep 100");
  spec.timeout = std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult result = run_process(spec);
  const auto elapsed = std::chrono::steady_clock::now() - start;

  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.describe(), "timed out after 0.5 s");
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  const pid_t grandchild = std::atoi(result.out.c_str());
  ASSERT_GT(grandchild, 0) << "stdout was: " << result.out;
  EXPECT_TRUE(process_gone(grandchild)) << "grandchild " << grandchild << " survived";
  EXPECT_TRUE(no_children_left());
}

TEST(ProcessTest, TimeoutEscalatesToSigkill) {
  ProcessSpec spec = shell("trap '' TERM; sleep 100");
  spec.timeout = std::chrono::milliseconds(300);
  const ProcessResult result = run_process(spec);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.term_signal, SIGKILL);
  EXPECT_GE(result.wall_seconds, 0.45);  // the timeout plus the 200 ms grace period
  EXPECT_LT(result.wall_seconds, 5.0);
}

TEST(ProcessTest, RunsConcurrentlyFromSeveralThreads) {
  std::vector<std::thread> threads;
  std::vector<int> matches(8, 0);
  for (std::size_t i = 0; i < matches.size(); ++i) {
    threads.emplace_back([i, &matches] {
      ProcessSpec spec;
      spec.argv = {"cat"};
      spec.stdin_data = std::string(256 * 1024, static_cast<char>('a' + i));
      const ProcessResult result = run_process(spec);
      matches[i] = result.ok() && result.out == spec.stdin_data ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const int match : matches) EXPECT_EQ(match, 1);
}

TEST(ProcessTest, KillsBackgroundChildrenWhenTheLeaderExits) {
  const ProcessResult result = run_process(shell("sleep 100 & echo $!"));
  EXPECT_TRUE(result.ok()) << result.describe();
  const pid_t grandchild = std::atoi(result.out.c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(process_gone(grandchild));
}

TEST(ProcessTest, ReportsTerminatingSignal) {
  const ProcessResult result = run_process(shell("kill -SEGV $$"));
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.term_signal, SIGSEGV);
  EXPECT_EQ(result.describe(), "killed by SIGSEGV (signal 11)");
}

TEST(ProcessTest, MissingProgramThrowsInputError) {
  for (const std::string program : {"mblast-no-such-program", "/nonexistent/dir/program"}) {
    ProcessSpec spec;
    spec.argv = {program};
    try {
      run_process(spec);
      ADD_FAILURE() << "expected mblast::Error for " << program;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ExitCode::bad_input);
      EXPECT_EQ(std::string(error.what()),
                "cannot run '" + program + "': No such file or directory");
      EXPECT_FALSE(error.hint().empty());
    }
  }
  EXPECT_TRUE(no_children_left());
}

TEST(ProcessTest, BadWorkingDirectoryThrows) {
  ProcessSpec spec = shell("pwd");
  spec.cwd = "/nonexistent/mblast-dir";
  EXPECT_THROW(run_process(spec), Error);

  spec.cwd = "/tmp";
  EXPECT_EQ(run_process(spec).out, "/tmp\n");
}

TEST(ProcessTest, TruncatesOutputAndKeepsTheChildRunning) {
  ProcessSpec spec = shell("head -c 5000000 /dev/zero; echo done >&2");
  spec.max_output_bytes = 1000;
  const ProcessResult result = run_process(spec);
  EXPECT_TRUE(result.ok()) << result.describe();
  EXPECT_TRUE(result.output_truncated);
  EXPECT_EQ(result.out.size(), 1000u);
  EXPECT_EQ(result.err, "done\n");
}

TEST(ProcessTest, ScrubsSecretsAndAppliesOverrides) {
  ::setenv("FOO_API_KEY", "sk-test-should-not-leak", 1);
  ::setenv("MBLAST_TEST_DB_PASSWORD", "hunter2-should-not-leak", 1);
  ::setenv("MBLAST_TEST_PLAIN", "plain-value", 1);
  ::setenv("MBLAST_TEST_REMOVED", "removed-value", 1);

  ProcessSpec spec;
  spec.argv = {"env"};
  spec.env["MBLAST_TEST_ADDED"] = "added-value";
  spec.env["MBLAST_TEST_REMOVED"] = std::nullopt;
  const ProcessResult result = run_process(spec);
  ASSERT_TRUE(result.ok()) << result.describe();
  EXPECT_EQ(result.out.find("should-not-leak"), std::string::npos);
  EXPECT_EQ(result.out.find("FOO_API_KEY"), std::string::npos);
  EXPECT_NE(result.out.find("MBLAST_TEST_PLAIN=plain-value\n"), std::string::npos);
  EXPECT_NE(result.out.find("MBLAST_TEST_ADDED=added-value\n"), std::string::npos);
  EXPECT_EQ(result.out.find("MBLAST_TEST_REMOVED"), std::string::npos);

  spec.scrub_secrets = false;
  EXPECT_NE(run_process(spec).out.find("FOO_API_KEY=sk-test-should-not-leak"), std::string::npos);

  for (const char* name :
       {"FOO_API_KEY", "MBLAST_TEST_DB_PASSWORD", "MBLAST_TEST_PLAIN", "MBLAST_TEST_REMOVED"}) {
    ::unsetenv(name);
  }
}

TEST(ProcessTest, RecognizesSecretNames) {
  EXPECT_TRUE(is_secret_env_name("OPENAI_API_KEY"));
  EXPECT_TRUE(is_secret_env_name("anthropic_api_key"));
  EXPECT_TRUE(is_secret_env_name("GITHUB_TOKEN"));
  EXPECT_TRUE(is_secret_env_name("AWS_SECRET_ACCESS_KEY"));
  EXPECT_TRUE(is_secret_env_name("PGPASSWORD"));
  EXPECT_FALSE(is_secret_env_name("PATH"));
  EXPECT_FALSE(is_secret_env_name("HOME"));
  EXPECT_FALSE(is_secret_env_name("TOKENIZERS_PARALLELISM"));
}

TEST(ProcessTest, AppliesResourceLimits) {
  ProcessSpec spec = shell("ulimit -n; ulimit -v; ulimit -t");
  spec.limit_open_files = 17;
  spec.limit_address_space_bytes = std::size_t{1} << 30;
  spec.limit_cpu_seconds = 7;
  const ProcessResult result = run_process(spec);
  ASSERT_TRUE(result.ok()) << result.describe() << ": " << result.err;
  EXPECT_EQ(result.out, "17\n1048576\n7\n");
}

TEST(ProcessTest, DoesNotLeakParentDescriptors) {
  const int leaked = ::fcntl(STDERR_FILENO, F_DUPFD, 57);  // deliberately without FD_CLOEXEC
  ASSERT_GE(leaked, 57);
  const ProcessResult result = run_process(shell("ls /proc/self/fd"));
  ::close(leaked);
  ASSERT_TRUE(result.ok()) << result.describe();
  std::istringstream lines(result.out);
  for (std::string fd; std::getline(lines, fd);) EXPECT_NE(fd, std::to_string(leaked));
}

TEST(ProcessTest, FindsProgramsOnPath) {
  const auto sh = find_program("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_EQ(::access(sh->c_str(), X_OK), 0);
  EXPECT_FALSE(find_program("mblast-no-such-program").has_value());
  EXPECT_FALSE(find_program("").has_value());
}

TEST(ProcessTest, LeavesNoZombies) {
  run_process(shell("exit 1"));
  run_process(shell("kill -KILL $$"));
  ProcessSpec slow = shell("sleep 100");
  slow.timeout = std::chrono::milliseconds(100);
  EXPECT_TRUE(run_process(slow).timed_out);
  ProcessSpec missing;
  missing.argv = {"/nonexistent/program"};
  EXPECT_THROW(run_process(missing), Error);
  EXPECT_TRUE(no_children_left());
}

}  // namespace
}  // namespace mblast
