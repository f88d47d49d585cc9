#include "mblast/child.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "mblast/error.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::no_children_left;
using testing::process_gone;
using testing::seconds_since;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", script};
  return spec;
}

Clock::time_point in(Clock::duration duration) { return Clock::now() + duration; }

TEST(ChildTest, HoldsALineConversation) {
  Child child(shell("while read l; do echo \"got $l\"; done"));
  EXPECT_GT(child.pid(), 0);
  ASSERT_TRUE(child.write("one\n", in(seconds(10))));
  EXPECT_EQ(child.read_line(in(seconds(10))), "got one");
  ASSERT_TRUE(child.write("two\nthree\n", in(seconds(10))));
  EXPECT_EQ(child.read_line(in(seconds(10))), "got two");
  EXPECT_EQ(child.read_line(in(seconds(10))), "got three");
  EXPECT_FALSE(child.exited());

  child.close_stdin();
  EXPECT_EQ(child.read_line(in(seconds(10))), std::nullopt);  // EOF
  const ProcessResult result = child.finish(in(seconds(10)));
  EXPECT_TRUE(result.ok()) << result.describe();
  EXPECT_EQ(result.out, "");
  EXPECT_TRUE(child.exited());
}

TEST(ChildTest, ReadLineHonoursTheDeadline) {
  Child child(shell("sleep 100"));
  const auto start = Clock::now();
  EXPECT_EQ(child.read_line(in(milliseconds(300))), std::nullopt);
  EXPECT_GE(seconds_since(start), 0.29);
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_FALSE(child.exited());
}

TEST(ChildTest, StderrFloodDoesNotBlockTheChild) {
  ProcessSpec spec = shell("head -c 10000000 /dev/zero | tr '\\0' x >&2; echo END >&2; echo done");
  spec.max_output_bytes = 1 << 20;
  Child child(spec);
  EXPECT_EQ(child.read_line(in(seconds(30))), "done");
  const ProcessResult result = child.finish(in(seconds(10)));
  EXPECT_TRUE(result.ok()) << result.describe();
  EXPECT_TRUE(result.output_truncated);
  ASSERT_EQ(child.stderr_tail().size(), std::size_t{1} << 20);
  EXPECT_TRUE(child.stderr_tail().ends_with("xxxxEND\n"));
  EXPECT_EQ(result.err, child.stderr_tail());
}

TEST(ChildTest, FinishReturnsTheStatusAndUnreadOutput) {
  Child child(shell("read l; echo \"got $l\"; echo two; printf partial; exit 4"));
  ASSERT_TRUE(child.write("one\n", in(seconds(10))));
  EXPECT_EQ(child.read_line(in(seconds(10))), "got one");
  const ProcessResult result = child.finish(in(seconds(10)));
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.out, "two\npartial");
  EXPECT_EQ(child.finish(in(seconds(10))).exit_code, 4);  // again: the same result
  EXPECT_EQ(child.read_line(in(seconds(1))), std::nullopt);
}

TEST(ChildTest, FinishTimesOutAndEscalatesToSigkill) {
  Child child(shell("trap '' TERM; echo ready; while :; do sleep 1; done"));
  ASSERT_EQ(child.read_line(in(seconds(10))), "ready");
  const auto start = Clock::now();
  const ProcessResult result = child.finish(in(milliseconds(300)));
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.term_signal, SIGKILL);
  EXPECT_GE(seconds_since(start), 0.45);  // the deadline plus the 200 ms grace period
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(ChildTest, DestructorKillsTheWholeGroup) {
  pid_t leader = 0;
  pid_t grandchild = 0;
  const auto start = Clock::now();
  {
    Child child(shell("sleep 100 & echo $!; sleep 100"));
    leader = child.pid();
    const auto line = child.read_line(in(seconds(10)));
    ASSERT_TRUE(line.has_value());
    grandchild = std::atoi(line->c_str());
  }
  EXPECT_LT(seconds_since(start), 5.0);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(process_gone(leader));
  EXPECT_TRUE(process_gone(grandchild)) << "grandchild " << grandchild << " survived";
  EXPECT_TRUE(no_children_left());
}

TEST(ChildTest, ReportsACrashAsASignal) {
  Child child(shell("kill -SEGV $$"));
  const ProcessResult result = child.finish(in(seconds(10)));
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.term_signal, SIGSEGV);
  EXPECT_EQ(result.describe(), "killed by SIGSEGV (signal 11)");
}

TEST(ChildTest, KillEndsTheChildAtOnce) {
  Child child(shell("sleep 100"));
  child.kill();
  EXPECT_TRUE(child.exited());
  EXPECT_FALSE(child.write("late\n", in(seconds(1))));
  const ProcessResult result = child.finish(in(seconds(10)));
  EXPECT_EQ(result.term_signal, SIGKILL);
  EXPECT_FALSE(result.timed_out);
}

TEST(ChildTest, NoticesExitWithoutBlocking) {
  Child child(shell("echo bye >&2; exit 0"));
  const auto start = Clock::now();
  while (!child.exited() && seconds_since(start) < 10) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_TRUE(child.exited());
  EXPECT_TRUE(child.finish(in(seconds(10))).ok());
  EXPECT_EQ(child.stderr_tail(), "bye\n");
}

TEST(ChildTest, WriteFailsOnceTheChildStopsReading) {
  Child child(shell("exec 0<&-; echo closed; sleep 100"));
  ASSERT_EQ(child.read_line(in(seconds(10))), "closed");
  EXPECT_FALSE(child.write(std::string(1 << 20, 'x'), in(seconds(10))));  // EPIPE, not SIGPIPE

  Child full(shell("sleep 100"));  // never reads: the pipe fills up
  const auto start = Clock::now();
  EXPECT_FALSE(full.write(std::string(4 << 20, 'x'), in(milliseconds(300))));
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(ChildTest, MovesOwnership) {
  Child first(shell("cat"));
  const int pid = first.pid();
  Child second(std::move(first));
  EXPECT_EQ(second.pid(), pid);
  EXPECT_EQ(first.pid(), -1);  // NOLINT(bugprone-use-after-move): moved-from state is defined
  ASSERT_TRUE(second.write("echo\n", in(seconds(10))));
  EXPECT_EQ(second.read_line(in(seconds(10))), "echo");

  Child third(shell("sleep 100"));
  const int replaced = third.pid();
  third = std::move(second);  // the sleeping child is killed and reaped
  EXPECT_EQ(third.pid(), pid);
  EXPECT_TRUE(process_gone(replaced));
  third.close_stdin();
  EXPECT_TRUE(third.finish(in(seconds(10))).ok());
}

TEST(ChildTest, ThrowsWhenItCannotStart) {
  ProcessSpec spec;
  spec.argv = {"mblast-no-such-program"};
  try {
    Child child(spec);
    ADD_FAILURE() << "expected mblast::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ExitCode::bad_input);
    EXPECT_EQ(std::string(error.what()),
              "cannot run 'mblast-no-such-program': No such file or directory");
  }
  ProcessSpec bad_dir = shell("true");
  bad_dir.cwd = "/nonexistent/mblast-dir";
  EXPECT_THROW(Child{bad_dir}, Error);
  EXPECT_TRUE(no_children_left());
}

TEST(ChildTest, AppliesTheSpecLikeRunProcess) {
  ::setenv("FOO_API_KEY", "sk-test-should-not-leak", 1);
  ProcessSpec spec = shell("env; pwd; ulimit -n");
  spec.env["MBLAST_TEST_ADDED"] = "added-value";
  spec.limit_open_files = 17;
  spec.cwd = "/tmp";
  Child child(spec);
  const ProcessResult result = child.finish(in(seconds(10)));
  ::unsetenv("FOO_API_KEY");
  ASSERT_TRUE(result.ok()) << result.describe();
  EXPECT_EQ(result.out.find("should-not-leak"), std::string::npos);
  EXPECT_NE(result.out.find("MBLAST_TEST_ADDED=added-value\n"), std::string::npos);
  EXPECT_TRUE(result.out.ends_with("\n/tmp\n17\n"));
}

TEST(ChildTest, LeavesNoZombies) {
  { Child running(shell("sleep 100")); }
  {
    Child exited(shell("exit 0"));
    while (!exited.exited()) std::this_thread::sleep_for(milliseconds(5));
  }
  Child finished(shell("kill -KILL $$"));
  finished.finish(in(seconds(10)));
  Child killed(shell("sleep 100"));
  killed.kill();
  EXPECT_TRUE(no_children_left());
}

}  // namespace
}  // namespace mblast
