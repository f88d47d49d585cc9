// `--shrink` on the native backends: a problem of KernelBench's sizes (tests/problems/big_relu.py,
// 1.6e9 elements) judged at reduced sizes, the shrink recorded in the run's configuration and
// summary, the agents shown the shrunken source, baselines found through --baselines, and each
// missing baseline named.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::run_mblast;
using testing::TempDir;

const fs::path kRoot = MBLAST_SOURCE_DIR;
const fs::path kProblem = kRoot / "tests/problems/big_relu.py";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class NativeShrink : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_torch_python()) GTEST_SKIP() << "no Python with torch";
  }
  ProcessResult optimize(const std::string& backend, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--kb",        (dir_ / "kb.sqlite").string(),
                                     "optimize",    kProblem.string(),
                                     "--backend",   backend,
                                     "--seeds",     "2",
                                     "--runs",      "5",
                                     "--cache-dir", (dir_ / "cache").string(),
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_mblast(args,
                      {{"XDG_CACHE_HOME", (dir_ / "xdg").string()}, {"MBLAST_LLM", std::nullopt}});
  }
  TempDir dir_;
};

TEST_F(NativeShrink, BadBudgetsAndBackendsWithoutTheOptionAreUsageErrors) {
  for (const std::string budget : {"0", "many", "12x"}) {
    const auto result = optimize("opencl", {"--shrink", budget, "--llm", "none", "--out",
                                            (dir_ / ("bad" + budget)).string()});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--shrink takes a number of elements"), std::string::npos)
        << result.err;
    EXPECT_FALSE(fs::exists(dir_ / ("bad" + budget))) << "refused before the run starts";
  }
  const auto cuda = optimize("cuda", {"--shrink", "4096", "--llm", "none", "--device", "cpu",
                                      "--out", (dir_ / "cuda").string()});
  EXPECT_EQ(cuda.exit_code, 2) << cuda.err;
  EXPECT_NE(cuda.err.find("--shrink is not an option of the cuda backend"), std::string::npos)
      << cuda.err;
  // A budget below what the problem's smallest sizes hold says so.
  const auto tiny =
      optimize("opencl", {"--shrink", "1", "--llm", "none", "--out", (dir_ / "tiny").string()});
  EXPECT_EQ(tiny.exit_code, 2) << tiny.err;
  EXPECT_NE(tiny.err.find("give a budget of at least"), std::string::npos) << tiny.err;
}

// The RVV baselines come from a plain C twin found through --baselines, and an authored actor
// answer that matches only the shrunken source's size line reaches a verified candidate.
TEST_F(NativeShrink, RvvJudgesTheShrunkenProblemAgainstItsCTwin) {
  if (!find_program("qemu-riscv64") || !find_program("clang")) GTEST_SKIP() << "no RVV toolchain";
  const fs::path examples = kRoot / "benchmarks/examples/kernelbench/level1";
  const fs::path twins = dir_ / "twins";
  fs::create_directories(twins);
  fs::copy_file(examples / "19_ReLU.c", twins / "big_relu.c");
  const std::string kernel = read_text(examples / "19_ReLU.rvv.c");
  nlohmann::json entry = {
      {"note", "authored"},
      {"match",
       {{"role_tag", "actor"},
        {"contains", {"batch_size 4096 -> 16, dim 393216 -> 1536", "mblast_forward"}}}},
      {"response",
       {{"text", "```c file=kernel.c\n" + kernel + "```\n"},
        {"provider", "replay"},
        {"model", "authored"},
        {"input_tokens", 0},
        {"output_tokens", 0}}}};
  std::ofstream(dir_ / "rvv.cassette.jsonl") << entry.dump() << "\n";
  const auto result = optimize("rvv", {"--shrink", "65536", "--baselines", twins.string(), "--llm",
                                       "replay:" + (dir_ / "rvv.cassette.jsonl").string(),
                                       "--technique", "rvv/strip-mining-vsetvl", "--iterations",
                                       "1", "--steps", "1", "--out", (dir_ / "run").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["shrink"]["factor"], 256);
  EXPECT_EQ(summary["shrink"]["elements"], 2 * 16 * 1536);
  EXPECT_EQ(summary["speedup_baseline"], "best_c");
  ASSERT_TRUE(summary["correct"].get<bool>()) << summary.dump(2);
  EXPECT_GT(summary["best_speedup"].get<double>(), 1.0) << summary.dump(2);
  const auto config = nlohmann::json::parse(read_text(dir_ / "run/config.json"));
  EXPECT_EQ(config["options"]["target"]["shrink"], "65536");
  EXPECT_EQ(config["baseline"]["shrink"]["factor"], 256);
}

// OpenCL's headline is PyTorch on the same CPU, which needs no hand-written file; the absent
// naive kernel is named. RVV without a C twin has no baseline and says why.
TEST_F(NativeShrink, MissingBaselinesAreNamed) {
  const auto rvv = optimize("rvv", {"--shrink", "65536", "--llm", "none", "--iterations", "1",
                                    "--steps", "1", "--out", (dir_ / "rvv").string()});
  ASSERT_EQ(rvv.exit_code, 0) << rvv.err;
  const auto rvv_summary = nlohmann::json::parse(rvv.out);
  EXPECT_TRUE(rvv_summary["baselines"].empty());
  ASSERT_EQ(rvv_summary["missing_baselines"].size(), 1u) << rvv_summary.dump(2);
  EXPECT_NE(rvv_summary["missing_baselines"][0].get<std::string>().find("no scalar C twin"),
            std::string::npos);

  const auto doctor = nlohmann::json::parse(run_mblast({"doctor", "--json"}).out, nullptr, false);
  bool opencl = false;
  for (const auto& check : doctor.value("checks", nlohmann::json::array())) {
    if (check.value("name", "") == "opencl") opencl = check.value("ok", false);
  }
  if (!opencl) GTEST_SKIP() << "no OpenCL device";
  const auto cl = optimize("opencl", {"--shrink", "65536", "--llm", "none", "--iterations", "1",
                                      "--steps", "1", "--out", (dir_ / "opencl").string()});
  ASSERT_EQ(cl.exit_code, 0) << cl.err;
  const auto summary = nlohmann::json::parse(cl.out);
  ASSERT_EQ(summary["baselines"].size(), 1u) << summary.dump(2);
  EXPECT_EQ(summary["baselines"][0]["name"], "torch_cpu");
  const std::string missing = summary["missing_baselines"].dump();
  EXPECT_NE(missing.find("naive_opencl: no naive"), std::string::npos) << missing;
  EXPECT_NE(missing.find("clblast: not a GEMM"), std::string::npos) << missing;
  EXPECT_EQ(summary["shrink"]["sizes"][0]["name"], "batch_size");
}

}  // namespace
}  // namespace mblast
