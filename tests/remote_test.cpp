// Remote targets for native runners: the local one for real, ssh and adb through stand-in
// programs on PATH that do locally what ssh/scp/adb would do on a board (the real ones need a
// board), and OpenCL candidates judged through each of them end to end.
#include "mblast/remote.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;
using testing::TempDir;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void script(const fs::path& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body;
  ::chmod(path.c_str(), 0755);
}

// ssh, scp and adb stand-ins that log each call and act on this machine.
class StandIns {
 public:
  StandIns() {
    const std::string log = (dir_ / "calls.log").string();
    script(dir_ / "ssh", "echo \"ssh $*\" >> " + log +
                             "\n[ \"$1\" = -o ] && shift 2\nshift\nexec sh -c \"$*\"\n");
    script(dir_ / "scp", "echo \"scp $*\" >> " + log + "\nshift 2\ncp \"${1#*:}\" \"${2#*:}\"\n");
    script(dir_ / "adb",
           "echo \"adb $*\" >> " + log +
               "\nshift 2\ncmd=$1; shift\ncase $cmd in\n"
               "  shell) exec sh -c \"$*\" ;;\n  push|pull) exec cp \"$1\" \"$2\" ;;\n"
               "esac\nexit 1\n");
  }
  std::string path_env() const { return dir_.path().string() + ":" + std::getenv("PATH"); }
  std::string calls() const { return read(dir_ / "calls.log"); }

 private:
  TempDir dir_;
};

void round_trip(RemoteTarget& target) {
  TempDir here;
  std::ofstream(here / "in.txt") << "hello";
  const std::string dir = target.make_workdir();
  ASSERT_FALSE(dir.empty());
  target.push(here / "in.txt", dir + "/in.txt");
  const auto copied =
      target.run({"cp", dir + "/in.txt", dir + "/out file.txt"}, std::chrono::seconds(10));
  EXPECT_TRUE(copied.ok()) << copied.describe() << copied.err;
  target.pull(dir + "/out file.txt", here / "back.txt");
  EXPECT_EQ(read(here / "back.txt"), "hello");
  const auto slept = target.run({"sleep", "5"}, std::chrono::seconds(1));
  EXPECT_TRUE(slept.timed_out) << slept.describe();
  const auto crashed = target.run({"sh", "-c", "kill -SEGV $$"}, std::chrono::seconds(10));
  EXPECT_EQ(crashed.term_signal, 11) << crashed.describe();
  target.remove(dir);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(RemoteTarget, LocalRoundTrip) {
  auto target = make_remote_target("local");
  EXPECT_EQ(target->name(), "local");
  round_trip(*target);
}

TEST(RemoteTarget, SshRoundTripWithTheRemoteTimeoutAndQuoting) {
  StandIns standins;
  ScopedEnv path("PATH", standins.path_env());
  auto target = make_remote_target("ssh:pi@board");
  EXPECT_EQ(target->name(), "ssh:pi@board");
  round_trip(*target);
  const std::string calls = standins.calls();
  EXPECT_NE(calls.find("ssh -o BatchMode=yes pi@board timeout -s KILL 1 sleep 5"),
            std::string::npos)
      << calls;
  EXPECT_NE(calls.find("scp -q -B"), std::string::npos) << calls;
  EXPECT_NE(calls.find("/out file.txt'"), std::string::npos) << calls;  // one quoted word
}

TEST(RemoteTarget, AdbRoundTrip) {
  StandIns standins;
  ScopedEnv path("PATH", standins.path_env());
  TempDir device_tmp;
  ScopedEnv tmp("MBLAST_ADB_TMP", device_tmp.path().string());
  auto target = make_remote_target("adb:emulator-5554");
  round_trip(*target);
  EXPECT_NE(standins.calls().find("adb -s emulator-5554 push"), std::string::npos);
}

TEST(RemoteTarget, UnknownSpecsAreInputErrors) {
  EXPECT_EQ(testing::error_of([] { make_remote_target("telnet:x"); }).code(), ExitCode::bad_input);
  EXPECT_EQ(testing::error_of([] { make_remote_target("ssh:"); }).code(), ExitCode::bad_input);
  EXPECT_EQ(shell_quote("plain-word_1.txt"), "plain-word_1.txt");
  EXPECT_EQ(shell_quote("it's here"), "'it'\\''s here'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(RemoteTarget, OpenClCandidatesAreJudgedThroughEachTarget) {
  const auto doctor = testing::run_mblast({"doctor", "--json"});
  if (doctor.out.find("\"name\": \"opencl\"") == std::string::npos ||
      nlohmann::json::parse(doctor.out)["checks"].dump().find("\"opencl\",\"ok\":true") ==
          std::string::npos) {
    GTEST_SKIP() << "no OpenCL device here";
  }
  StandIns standins;
  TempDir dir;
  const fs::path root = MBLAST_SOURCE_DIR;
  for (const std::string remote : {"local", "ssh:board", "adb:phone"}) {
    const auto result = testing::run_mblast(
        {"eval", (root / "benchmarks/problems/native/swish.py").string(), "--backend", "opencl",
         "--candidate", (root / "benchmarks/examples/native/swish.opt.cl").string(), "--remote",
         remote, "--remote-mblast", testing::mblast_binary(), "--seeds", "2", "--runs", "5",
         "--cache-dir", (dir / "cache").string(), "--json"},
        {{"PATH", standins.path_env()},
         {"XDG_CACHE_HOME", (dir / "xdg").string()},
         {"MBLAST_ADB_TMP", dir.path().string()}});
    ASSERT_EQ(result.exit_code, 0) << remote << "\n" << result.err << result.out;
    const auto r = nlohmann::json::parse(result.out);
    EXPECT_TRUE(r["correct"].get<bool>()) << remote;
    EXPECT_GT(r["speedup"].get<double>(), 0.0) << remote;
  }
  EXPECT_NE(standins.calls().find("internal opencl-run"), std::string::npos);
}

TEST(RemoteTarget, RvvExecutablesRunOnATargetAndAreTimedByWallClock) {
  if (!find_program("qemu-riscv64") || !find_program("clang")) GTEST_SKIP() << "no RVV toolchain";
  StandIns standins;
  TempDir dir;
  const fs::path root = MBLAST_SOURCE_DIR;
  // No board here: the ssh stand-in runs the pushed executable through QEMU, as a board would
  // run it natively.
  const auto result = testing::run_mblast(
      {"eval", (root / "benchmarks/problems/native/swish.py").string(), "--backend", "rvv",
       "--candidate", (root / "benchmarks/examples/native/swish.rvv.c").string(), "--remote",
       "ssh:board", "--remote-prefix", "qemu-riscv64 -cpu rv64,v=true,vext_spec=v1.0,vlen=256",
       "--seeds", "2", "--cache-dir", (dir / "cache").string(), "--json"},
      {{"PATH", standins.path_env()}, {"XDG_CACHE_HOME", (dir / "xdg").string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto r = nlohmann::json::parse(result.out);
  EXPECT_TRUE(r["correct"].get<bool>());
  EXPECT_GT(r["timing"]["median_ms"].get<double>(), 0.0);
  EXPECT_EQ(r["timing"]["runs"], 30);
  EXPECT_FALSE(r["timing"].contains("cost"));
  EXPECT_EQ(r["baselines"][0]["unit"], "ms");  // baselines run on the same target
  EXPECT_NE(standins.calls().find("harness"), std::string::npos);
}

}  // namespace
}  // namespace mblast
