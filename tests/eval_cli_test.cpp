// `mblast eval --device cpu` end to end: the real binary, the embedded Python worker and
// Debian's PyTorch, as CI runs it. The worker's own checks are covered in depth by pytest.
#include <signal.h>
#include <algorithm>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cuda/cuda_build.hpp"
#include "mblast/python.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::run_mblast;
using testing::TempDir;
using testing::test_file;

class EvalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_torch_python())
      GTEST_SKIP() << "no Python with torch (apt-get install python3-torch)";
  }
  ProcessResult eval(const std::string& problem, const std::string& candidate,
                     std::vector<std::string> extra = {}) {
    return eval_as(testing::mblast_binary(), problem, candidate, extra, {});
  }
  // `BINARY eval PROBLEM --candidate CANDIDATE --device cpu --json --runs 5` with this test's cache
  // folders, then `extra`; `env` is set besides XDG_CACHE_HOME. 120 s at most, as run_mblast.
  ProcessResult eval_as(const std::filesystem::path& binary, const std::string& problem,
                        const std::string& candidate, const std::vector<std::string>& extra,
                        std::map<std::string, std::optional<std::string>> env) {
    ProcessSpec spec;
    spec.argv = {binary.string(),
                 "eval",
                 test_file(problem),
                 "--candidate",
                 test_file(candidate),
                 "--device",
                 "cpu",
                 "--json",
                 "--runs",
                 "5",
                 "--cache-dir",
                 (cache_ / "cache").string()};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    env["XDG_CACHE_HOME"] = (cache_ / "xdg").string();
    spec.env = std::move(env);
    spec.timeout = std::chrono::seconds(120);
    return run_process(spec);
  }
  TempDir cache_;
};

TEST_F(EvalCli, CorrectCandidatePrintsTheDesignObjectAndExitsZero) {
  auto result = eval("problems/relu_small.py", "candidates/cpu/correct_relu.py");
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  auto json = nlohmann::json::parse(result.out);
  for (const char* field : {"correct", "max_abs_err", "max_rel_err", "ref_ms", "cand_ms", "speedup",
                            "flags", "error"}) {
    EXPECT_TRUE(json.contains(field)) << field;
  }
  EXPECT_TRUE(json["correct"].get<bool>());
  EXPECT_TRUE(json["flags"].empty());
  EXPECT_TRUE(json["error"].is_null());
  EXPECT_GT(json["ref_ms"].get<double>(), 0);
  EXPECT_GT(json["cand_ms"].get<double>(), 0);
  EXPECT_EQ(json["trials"].size(), 5u);
  EXPECT_EQ(json["tolerance"]["policy"], "eager-widened");
}

// mblast_cuda.load() in the sandboxed worker builds through `mblast internal cuda-build` (the
// judge's cache is read-only there, so into the worker's own folder) and loads the library; on
// the CPU its first call is then refused for the CPU tensor, which shows the library was loaded.
TEST_F(EvalCli, ACandidatesCudaIsBuiltByMblastsDriverInTheWorker) {
  if (!find_nvcc()) GTEST_SKIP() << "nvcc not found";
  auto result = eval("problems/relu_small.py", "candidates/cuda/relu_fast.py");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["error_kind"], "candidate_runtime") << json.dump(2);
  EXPECT_NE(json["error"].get<std::string>().find("needs a CUDA tensor, got one on cpu"),
            std::string::npos)
      << json["error"];
}

TEST_F(EvalCli, CheatingCandidateExitsOneWithItsFlag) {
  auto result = eval("problems/relu_small.py", "candidates/cpu/mutate_input.py", {"--seeds", "2"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto json = nlohmann::json::parse(result.out);
  EXPECT_FALSE(json["correct"].get<bool>());
  auto flags = json["flags"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(flags.begin(), flags.end(), "input_mutated"), flags.end());
}

TEST_F(EvalCli, SeveralCandidatesInOneCallAreJudgedInOrder) {
  auto result = eval("problems/relu_small.py", "candidates/cpu/correct_relu.py",
                     {"--seeds", "2", "--candidate", test_file("candidates/cpu/mutate_input.py")});
  EXPECT_EQ(result.exit_code, 1) << result.err;  // not all correct
  auto json = nlohmann::json::parse(result.out);
  ASSERT_TRUE(json["results"].is_array()) << result.out;
  ASSERT_EQ(json["results"].size(), 2u);
  const auto& good = json["results"][0];
  const auto& cheat = json["results"][1];
  EXPECT_EQ(good["candidate"], test_file("candidates/cpu/correct_relu.py"));
  EXPECT_EQ(cheat["candidate"], test_file("candidates/cpu/mutate_input.py"));
  EXPECT_TRUE(good["correct"].get<bool>()) << good.dump(2);
  EXPECT_FALSE(cheat["correct"].get<bool>());
  auto flags = cheat["flags"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(flags.begin(), flags.end(), "input_mutated"), flags.end());
  for (const auto& r : json["results"]) {
    EXPECT_GE(r["eval_seconds"].get<double>(), r["worker_wait_seconds"].get<double>());
    EXPECT_EQ(r["build_seconds"].get<double>(), 0.0);  // no CUDA on the CPU
    EXPECT_TRUE(r["phase_seconds"].contains("trials"));
  }
  EXPECT_GT(json["p90_s"].get<double>(), 0.0);
  EXPECT_LE(json["p50_s"].get<double>(), json["p90_s"].get<double>());
}

TEST_F(EvalCli, SeveralCandidatesAllCorrectExitZeroAndPrintASummary) {
  auto args = std::vector<std::string>{"eval",
                                       test_file("problems/relu_small.py"),
                                       "--candidate",
                                       test_file("candidates/cpu/correct_relu.py"),
                                       "--candidate",
                                       test_file("problems/relu_small.py"),
                                       "--device",
                                       "cpu",
                                       "--seeds",
                                       "1",
                                       "--no-timing",
                                       "--cache-dir",
                                       (cache_ / "cache").string()};
  auto result = run_mblast(args, {{"XDG_CACHE_HOME", (cache_ / "xdg").string()}});
  EXPECT_EQ(result.exit_code, 0) << result.err << result.out;
  EXPECT_NE(result.out.find("summary     2 of 2 correct"), std::string::npos) << result.out;
}

TEST_F(EvalCli, CrashingCandidateIsReportedAndTheDriverSurvives) {
  auto result = eval("problems/relu_small.py", "candidates/cpu/segfault.py", {"--no-timing"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto json = nlohmann::json::parse(result.out);
  EXPECT_FALSE(json["correct"].get<bool>());
  EXPECT_NE(json["error"].get<std::string>().find("SIGSEGV"), std::string::npos);
}

TEST_F(EvalCli, HangingCandidateIsKilledAtTheTimeout) {
  auto result =
      eval("problems/relu_small.py", "candidates/cpu/hang.py", {"--no-timing", "--timeout", "20"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["error_kind"], "timeout");
}

TEST_F(EvalCli, VerboseShowsTheStepsOfAnEvaluation) {
  auto args = std::vector<std::string>{"-v",
                                       "eval",
                                       test_file("problems/relu_small.py"),
                                       "--candidate",
                                       test_file("candidates/cpu/correct_relu.py"),
                                       "--device",
                                       "cpu",
                                       "--runs",
                                       "5",
                                       "--cache-dir",
                                       (cache_ / "cache").string()};
  const auto result = run_mblast(args, {{"XDG_CACHE_HOME", (cache_ / "xdg").string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  for (const char* step : {"[debug] judging correct_relu.py", "\"primed\" after", "\"timed\" after",
                           "correct_relu.py: correct true", "timing "}) {
    EXPECT_NE(result.err.find(step), std::string::npos) << step << "\n" << result.err;
  }
  const auto quiet = run_mblast(std::vector<std::string>(args.begin() + 1, args.end()),
                                {{"XDG_CACHE_HOME", (cache_ / "xdg").string()}});
  EXPECT_EQ(quiet.err.find("[debug]"), std::string::npos) << quiet.err;
}

TEST_F(EvalCli, AHangOnTheCpuIsStoppedWithinTwoMinutesByDefault) {
  auto result = eval("problems/relu_small.py", "candidates/cpu/hang.py", {"--no-timing"});
  ASSERT_FALSE(result.timed_out) << "still running after 120 s";
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["error_kind"], "timeout");
  EXPECT_NE(json["error"].get<std::string>().find("compile allowance (90.0 s)"), std::string::npos)
      << json["error"];
  EXPECT_LT(result.wall_seconds, 120.0);
}

TEST_F(EvalCli, UnusableProblemExitsTwoNamingTheFileAndCause) {
  auto result = eval("problems/broken_syntax.py", "candidates/cpu/correct_relu.py");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("broken_syntax.py"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("SyntaxError"), std::string::npos) << result.err;

  auto missing = eval("problems/no_such_problem.py", "candidates/cpu/correct_relu.py");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no_such_problem.py"), std::string::npos);
}

// The device's ceilings are measured once and cached; an entry measured another way (medians,
// before "method" was recorded, or by another ceilings.py) is measured again, one measured this
// way is read.
TEST_F(EvalCli, CeilingsMeasuredAnotherWayAreMeasuredAgain) {
  namespace fs = std::filesystem;
  ASSERT_EQ(eval("problems/relu_small.py", "candidates/cpu/correct_relu.py").exit_code, 0);
  const fs::path folder = cache_.path() / "cache" / "ceilings";
  ASSERT_TRUE(fs::is_directory(folder));
  const fs::path entry = fs::directory_iterator(folder)->path();
  const auto read = [&] {
    std::ifstream in(entry);
    return nlohmann::json::parse(in);
  };
  const auto rewrite = [&](std::optional<std::string> method) {
    nlohmann::json old = read();
    old["bandwidth_gbs"] = 0.125;
    if (method)
      old["method"] = *method;
    else
      old.erase("method");
    std::ofstream(entry) << old.dump();
  };
  const auto bandwidth = [&] { return read()["bandwidth_gbs"].get<double>(); };
  rewrite(std::nullopt);
  ASSERT_EQ(eval("problems/relu_small.py", "candidates/cpu/correct_relu.py").exit_code, 0);
  EXPECT_NE(bandwidth(), 0.125);
  const std::string method = read()["method"];
  rewrite(method);
  ASSERT_EQ(eval("problems/relu_small.py", "candidates/cpu/correct_relu.py").exit_code, 0);
  EXPECT_EQ(bandwidth(), 0.125);

  // A worker whose ceilings.py differs measures another way: its entry is measured again.
  fs::path worker;
  for (const auto& item : fs::directory_iterator(cache_.path() / "xdg" / "mblast"))
    if (item.path().filename().string().rfind("worker-", 0) == 0) worker = item.path();
  ASSERT_FALSE(worker.empty());
  const fs::path changed = cache_.path() / "changed-worker";
  fs::copy(worker, changed, fs::copy_options::recursive);
  std::ofstream(changed / "mblast_worker" / "ceilings.py", std::ios::app) << "\n# changed\n";
  const auto result =
      eval_as(testing::mblast_binary(), "problems/relu_small.py", "candidates/cpu/correct_relu.py",
              {}, {{"MBLAST_WORKER_DIR", changed.string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(bandwidth(), 0.125);
  EXPECT_NE(read()["method"], method);
}

TEST_F(EvalCli, ProfileReportsSignaturesForTheStateClassifier) {
  auto result =
      eval("problems/matmul_small.py", "problems/matmul_small.py", {"--profile", "--seeds", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  auto json = nlohmann::json::parse(result.out);
  for (const char* key : {"signature", "reference_signature"}) {
    ASSERT_TRUE(json[key].is_object()) << key;
    EXPECT_GE(json[key]["kernel_count"].get<double>(), 1.0);
    EXPECT_GT(json[key]["total_ms"].get<double>(), 0.0);
    EXPECT_FALSE(json[key]["ops"].empty());
    // Added by the driver from the worker's counted work and the device's measured ceilings.
    EXPECT_GT(json[key]["arithmetic_intensity"].get<double>(), 0.0) << json[key].dump();
    EXPECT_GT(json[key]["memory_sol_fraction"].get<double>(), 0.0) << json[key].dump();
    EXPECT_EQ(json[key]["sol_fraction"],
              std::max(json[key]["memory_sol_fraction"], json[key]["compute_sol_fraction"]));
    // The FLOP rate is the worker's, each arithmetic unit at its own peak.
    const double compute_ms =
        json["flops"].get<double>() / (json["sol_peak_tflops"].get<double>() * 1e9);
    EXPECT_NEAR(
        json[key]["compute_sol_fraction"].get<double>() * json[key]["total_ms"].get<double>(),
        compute_ms, compute_ms * 1e-9);
  }
}

// --profile ncu on the CPU: the verdict and the PyTorch profiler's numbers as with --profile,
// and the candidate's signature says why Nsight Compute gave none; a value other than torch or ncu
// is bad usage.
TEST_F(EvalCli, ProfileNcuSaysWhyThereAreNoCountersWithoutAGpu) {
  auto result = eval("problems/matmul_small.py", "problems/matmul_small.py",
                     {"--profile=ncu", "--seeds", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto json = nlohmann::json::parse(result.out);
  const auto& signature = json["signature"];
  EXPECT_GT(signature["kernel_count"].get<double>(), 0.0);
  EXPECT_EQ(signature["profiler"], "ncu");
  EXPECT_EQ(signature["ncu"]["status"], "unavailable");
  EXPECT_NE(signature["ncu"]["reason"].get<std::string>().find("CUDA device"), std::string::npos);
  EXPECT_FALSE(json["reference_signature"].contains("ncu"));  // the candidate's only

  std::vector<std::string> argv = {"eval",        test_file("problems/matmul_small.py"),
                                   "--candidate", test_file("problems/matmul_small.py"),
                                   "--device",    "cpu",
                                   "--seeds",     "1",
                                   "--no-timing", "--profile=ncu"};
  auto text = testing::run_mblast(argv);
  ASSERT_EQ(text.exit_code, 0) << text.err << text.out;
  EXPECT_NE(text.out.find("ncu         unavailable: ncu needs a CUDA device"), std::string::npos)
      << text.out;
  argv.back() = "--profile=nvprof";
  auto bad = testing::run_mblast(argv);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--profile"), std::string::npos) << bad.err;
}

TEST_F(EvalCli, ExportsOnlyCorrectCandidates) {
  const auto good = cache_ / "good.py";
  auto result = eval("problems/relu_small.py", "candidates/cpu/correct_relu.py",
                     {"--no-timing", "--seeds", "1", "--export", good.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  ASSERT_TRUE(std::filesystem::exists(good));
  const auto bad = cache_ / "bad.py";
  result = eval("problems/relu_small.py", "candidates/cpu/zero_output.py",
                {"--no-timing", "--seeds", "1", "--export", bad.string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(bad));
  EXPECT_NE(result.err.find("not exported"), std::string::npos) << result.err;
}

TEST_F(EvalCli, CudaDeviceWithoutAGpuExitsTwoSuggestingTheCpu) {
  if (find_program("nvidia-smi")) GTEST_SKIP() << "this machine may have a GPU";
  auto result = run_mblast({"eval", test_file("problems/relu_small.py"), "--candidate",
                            test_file("candidates/cpu/correct_relu.py"), "--device", "cuda",
                            "--cache-dir", (cache_ / "cache").string()},
                           {{"XDG_CACHE_HOME", (cache_ / "xdg").string()}});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--device cpu"), std::string::npos) << result.err;
}

// The eval server (forced on for the CPU with MBLAST_EVAL_SERVER=1) outlives the binary that
// started it: an identical copy put in its place must still be served, and a changed binary must
// not be.
class EvalServer : public EvalCli {
 protected:
  ProcessResult eval_with(const std::filesystem::path& binary) {
    return eval_as(binary, "problems/relu_small.py", "candidates/cpu/correct_relu.py", {},
                   {{"XDG_RUNTIME_DIR", (cache_ / "run").string()},
                    {"MBLAST_EVAL_SERVER", "1"},
                    {"MBLAST_EVAL_SERVER_IDLE_S", "60"}});
  }
  // Replaces `binary` by a copy of `from` through a rename (a new inode, as an installer does).
  static void replace(const std::filesystem::path& binary, const std::filesystem::path& from) {
    const auto staged = binary.string() + ".new";
    std::filesystem::copy_file(from, staged, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::last_write_time(staged, std::filesystem::last_write_time(from));
    std::filesystem::rename(staged, binary);
  }
  static int server_pid(const ProcessResult& r) {
    return nlohmann::json::parse(r.out)["eval_server"].value("pid", 0);
  }
};

TEST_F(EvalServer, AReplacedBinaryNeverFailsTheCommand) {
  std::filesystem::create_directories(cache_ / "run");
  std::filesystem::permissions(cache_ / "run", std::filesystem::perms::owner_all);
  const auto binary = cache_ / "bin" / "mblast";
  std::filesystem::create_directories(binary.parent_path());
  replace(binary, testing::mblast_binary());
  const auto first = eval_with(binary);
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  const int pid = server_pid(first);
  ASSERT_GT(pid, 0) << first.out;

  replace(binary, testing::mblast_binary());  // the same bytes and time: the same identity
  const auto same = eval_with(binary);
  ASSERT_EQ(same.exit_code, 0) << same.err << same.out;
  EXPECT_EQ(server_pid(same), pid);  // the old server still serves it

  replace(binary, testing::mblast_binary());
  std::filesystem::last_write_time(binary, std::filesystem::file_time_type::clock::now());
  EXPECT_TRUE(testing::process_gone(pid) ||
              (std::this_thread::sleep_for(std::chrono::seconds(4)), testing::process_gone(pid)))
      << "the server of a replaced binary is still running";
  const auto changed = eval_with(binary);
  ASSERT_EQ(changed.exit_code, 0) << changed.err << changed.out;
  EXPECT_NE(server_pid(changed), pid);
  ::kill(server_pid(changed), SIGTERM);
}

}  // namespace
}  // namespace mblast
