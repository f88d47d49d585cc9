// The RVV runner end to end: clang cross-compiles candidates with the harness, QEMU runs them,
// the trace is priced. Skipped where the RVV toolchain or qemu-riscv64 is missing.
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "native/bundle.hpp"
#include "rvv/rvv_runner.hpp"
#include "rvv/rvv_toolchain.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::TempDir;

Tensor float_tensor(const std::string& name, TensorRole role, std::vector<std::int64_t> shape,
                    const std::vector<float>& values) {
  return testing::make_tensor(name, role, DType::f32, std::move(shape),
                              std::vector<double>(values.begin(), values.end()));
}

Tensor double_tensor(const std::string& name, std::vector<std::int64_t> shape,
                     const std::vector<double>& values) {
  return testing::make_tensor(name, TensorRole::expected, DType::f64, std::move(shape), values);
}

// Bundles of y = 2 * x over `n` floats, one per seed.
BundleSet doubling_bundles(const TempDir& dir, int seeds, long n) {
  BundleSet set;
  set.dir = dir.path();
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937 random(static_cast<unsigned>(seed + 1));
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<std::size_t>(n));
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = normal(random);
      y[i] = 2.0 * x[i];
    }
    Bundle bundle;
    bundle.tensors.push_back(float_tensor("input0", TensorRole::input, {n}, x));
    bundle.tensors.push_back(double_tensor("output0", {n}, y));
    const auto file = dir / ("seed-" + std::to_string(seed) + ".mbtb");
    write_bundle(file, bundle);
    set.files.push_back(file);
  }
  return set;
}

constexpr const char* kPrologue = R"(#include "mblast_rvv.h"
void mblast_forward(const mblast_tensor* in, int n_in, mblast_tensor* out, int n_out) {
  const float* x = in[0].data;
  float* y = out[0].data;
  const long n = in[0].sizes[0];
)";

class RvvRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!rvv::find_toolchain(&why)) GTEST_SKIP() << "no RVV toolchain: " << why;
    options_.cache_dir = cache_.path();
  }

  // A candidate whose forward body is `body`.
  std::filesystem::path candidate(const std::string& name, const std::string& body) {
    const auto path = files_ / (name + ".c");
    const bool vector = body.find("vsetvl") != std::string::npos;
    std::ofstream(path) << (vector ? "#include <riscv_vector.h>\n" : "") << kPrologue << body
                        << "\n}\n";
    return path;
  }

  TempDir files_;
  TempDir cache_;
  TempDir bundle_dir_;
  RvvOptions options_;
};

constexpr const char* kScalarDoubling = "for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i];";
constexpr const char* kVectorDoubling = R"(
  for (long i = 0; i < n;) {
    size_t vl = vsetvl_e32m4((size_t)(n - i));
    vse32_v_f32m4(y + i, vfmul_vf_f32m4(vle32_v_f32m4(x + i, vl), 2.0f, vl), vl);
    i += (long)vl;
  })";

TEST_F(RvvRunnerTest, RunsACorrectVectorCandidateAndPricesIt) {
  const BundleSet bundles = doubling_bundles(bundle_dir_, 2, 1000);
  const NativeRunResult result =
      run_rvv_candidate(candidate("vector", kVectorDoubling), bundles, options_);
  ASSERT_EQ(result.error_kind, "") << result.error;
  ASSERT_EQ(result.outputs.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const Bundle bundle = read_bundle(bundles.files[i]);
    const Comparison c =
        compare_outputs(bundle.with_role(TensorRole::expected), result.outputs[i], 1e-6, 1e-6);
    EXPECT_TRUE(c.pass) << c.error;
  }
  EXPECT_GT(result.timing["cost"].get<double>(), 0);
  EXPECT_GT(result.timing["vector_instructions"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(result.timing["vlen"], 256);
  EXPECT_EQ(result.timing["model"], "rvv-cost-v1 vlen=256 dlen=128");
  EXPECT_TRUE(result.details["flags"].empty());
}

TEST_F(RvvRunnerTest, CostIsIdenticalOnEveryRunAndBelowTheScalarLoop) {
  const BundleSet bundles = doubling_bundles(bundle_dir_, 1, 4096);
  const auto vector = candidate("vector", kVectorDoubling);
  const NativeRunResult first = run_rvv_candidate(vector, bundles, options_);
  TempDir other_cache;
  RvvOptions fresh = options_;
  fresh.cache_dir = other_cache.path();  // rebuilt from scratch, then run again
  const NativeRunResult second = run_rvv_candidate(vector, bundles, fresh);
  const NativeRunResult third = run_rvv_candidate(vector, bundles, fresh);
  ASSERT_EQ(first.error_kind, "") << first.error;
  EXPECT_FALSE(second.details["cached_build"].get<bool>());
  EXPECT_TRUE(third.details["cached_build"].get<bool>());
  EXPECT_EQ(first.timing, second.timing);
  EXPECT_EQ(first.timing, third.timing);

  const NativeRunResult scalar = run_rvv_candidate(candidate("scalar", kScalarDoubling), bundles,
                                                   rvv_scalar_options(options_));
  ASSERT_EQ(scalar.error_kind, "") << scalar.error;
  EXPECT_EQ(scalar.timing["vector_instructions"], 0);
  EXPECT_LT(first.timing["cost"].get<double>() * 4, scalar.timing["cost"].get<double>());
}

// The cost check counts through QEMU's plugin interface what the cost model reads from QEMU's
// log: the same instructions, but the bytes each access really moves (a tail strip moves less
// than the VLMAX the model prices it at).
TEST_F(RvvRunnerTest, TheCostCheckCountsTheModelsInstructionsAndTheRealBytes) {
  constexpr long n = 1000;  // 31 strips of 32 floats (VLEN 256, LMUL 4) and a tail of 8
  const BundleSet bundles = doubling_bundles(bundle_dir_, 1, n);
  const auto vector = candidate("vector", kVectorDoubling);
  const NativeRunResult plain = run_rvv_candidate(vector, bundles, options_);
  RvvOptions checked = options_;
  checked.cost_check = true;
  const NativeRunResult result = run_rvv_candidate(vector, bundles, checked);
  ASSERT_EQ(result.error_kind, "") << result.error;
  EXPECT_FALSE(plain.timing.contains("check"));
  const auto& t = result.timing;
  ASSERT_TRUE(t.contains("check")) << t.dump();
  const auto& check = t["check"];
  EXPECT_EQ(check["instructions"], t["instructions"]);
  EXPECT_EQ(check["vector_instructions"], t["vector_instructions"]);
  EXPECT_EQ(check["load_bytes"].get<std::uint64_t>(),
            t["scalar_load_bytes"].get<std::uint64_t>() + 4 * n);
  EXPECT_EQ(check["store_bytes"].get<std::uint64_t>(),
            t["scalar_store_bytes"].get<std::uint64_t>() + 4 * n);
  EXPECT_EQ(t["vector_load_bytes"].get<std::uint64_t>(), 32u * 4 * 32);  // 32 strips at VLMAX
  EXPECT_GT(check["cycles"].get<std::uint64_t>(), check["instructions"].get<std::uint64_t>());
  EXPECT_EQ(plain.timing["cost"], t["cost"]);  // the check leaves the model's price alone
}

// What the model does not see: the same loop over a matrix by columns misses the L1 on every
// access, by rows once per cache line.
TEST_F(RvvRunnerTest, TheCostCheckSeesCacheMissesTheModelDoesNot) {
  const BundleSet bundles = doubling_bundles(bundle_dir_, 1, 64 * 1024);  // 256 KiB, L1 32 KiB
  const std::string rows =
      "for (long r = 0; r < 64; ++r) for (long c = 0; c < 1024; ++c) "
      "y[r * 1024 + c] = 2.0f * x[r * 1024 + c];";
  const std::string columns =
      "for (long c = 0; c < 1024; ++c) for (long r = 0; r < 64; ++r) "
      "y[r * 1024 + c] = 2.0f * x[r * 1024 + c];";
  RvvOptions checked = rvv_scalar_options(options_);
  checked.cost_check = true;
  const NativeRunResult by_rows = run_rvv_candidate(candidate("rows", rows), bundles, checked);
  const NativeRunResult by_columns =
      run_rvv_candidate(candidate("columns", columns), bundles, checked);
  ASSERT_EQ(by_rows.error_kind, "") << by_rows.error;
  ASSERT_EQ(by_columns.error_kind, "") << by_columns.error;
  const auto misses = [](const NativeRunResult& r) {
    return r.timing["check"]["l1_misses"].get<double>();
  };
  const auto cost = [](const NativeRunResult& r) { return r.timing["cost"].get<double>(); };
  EXPECT_GT(misses(by_columns), 8 * misses(by_rows));
  EXPECT_LT(std::abs(cost(by_columns) - cost(by_rows)), 0.25 * cost(by_rows));
  EXPECT_GT(by_columns.timing["check"]["cycles"].get<double>(),
            2 * by_rows.timing["check"]["cycles"].get<double>());
}

TEST_F(RvvRunnerTest, ReportsCompileErrorsVerbatim) {
  const NativeRunResult result = run_rvv_candidate(candidate("broken", "y[0] = undeclared_thing;"),
                                                   doubling_bundles(bundle_dir_, 1, 8), options_);
  EXPECT_EQ(result.error_kind, "compile");
  EXPECT_NE(result.error.find("candidate.c:"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("error: use of undeclared identifier 'undeclared_thing'"),
            std::string::npos)
      << result.error;
  EXPECT_TRUE(result.outputs.empty());
}

TEST_F(RvvRunnerTest, RejectsCodeThatRunsBeforeTheForward) {
  const auto path = files_ / "constructor.c";
  std::ofstream(path) << kPrologue << kScalarDoubling << "\n}\nstatic volatile int touched;\n"
                      << "__attribute__((constructor)) static void early(void) { touched = 1; }\n";
  const NativeRunResult result =
      run_rvv_candidate(path, doubling_bundles(bundle_dir_, 1, 8), options_);
  EXPECT_EQ(result.error_kind, "compile");
  EXPECT_NE(result.error.find("runs before mblast_forward"), std::string::npos) << result.error;
}

TEST_F(RvvRunnerTest, AWrongResultFailsTheComparison) {
  const BundleSet bundles = doubling_bundles(bundle_dir_, 1, 64);
  const NativeRunResult result = run_rvv_candidate(
      candidate("wrong", "for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i] + (i == 7);"), bundles,
      options_);
  ASSERT_EQ(result.error_kind, "") << result.error;
  const Bundle bundle = read_bundle(bundles.files[0]);
  const Comparison c =
      compare_outputs(bundle.with_role(TensorRole::expected), result.outputs[0], 1e-4, 1e-4);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.location["index"], nlohmann::json::array({7}));
}

TEST_F(RvvRunnerTest, UnwrittenOutputsStayNaN) {
  const NativeRunResult result = run_rvv_candidate(
      candidate("partial", "for (long i = 0; i < n / 2; ++i) y[i] = 2.0f * x[i];"),
      doubling_bundles(bundle_dir_, 1, 16), options_);
  ASSERT_EQ(result.error_kind, "") << result.error;
  EXPECT_FALSE(std::isnan(result.outputs[0][0].f32()[7]));
  EXPECT_TRUE(std::isnan(result.outputs[0][0].f32()[8]));
}

TEST_F(RvvRunnerTest, FlagsAForwardThatWritesItsInputs) {
  const NativeRunResult result = run_rvv_candidate(
      candidate("mutates",
                "for (long i = 0; i < n; ++i) { y[i] = 2.0f * x[i]; in[0].data[i] = 0; }"),
      doubling_bundles(bundle_dir_, 1, 16), options_);
  ASSERT_EQ(result.error_kind, "") << result.error;
  EXPECT_EQ(result.details["flags"], nlohmann::json::array({"input_mutated"}));
}

TEST_F(RvvRunnerTest, KillsAHangAtTheTimeoutAndLeavesNoProcess) {
  options_.timeout = std::chrono::seconds(2);
  const auto start = std::chrono::steady_clock::now();
  const NativeRunResult result =
      run_rvv_candidate(candidate("hang", "volatile long spin = 0; for (;;) ++spin;"),
                        doubling_bundles(bundle_dir_, 1, 8), options_);
  EXPECT_EQ(result.error_kind, "timeout") << result.error;
  EXPECT_LT(testing::seconds_since(start), 30.0);
  EXPECT_TRUE(testing::no_children_left());
}

TEST_F(RvvRunnerTest, StopsATraceThatPassesTheCap) {
  options_.max_trace_bytes = 1 << 20;
  const NativeRunResult result = run_rvv_candidate(
      candidate("long",
                "for (long r = 0; r < 100000; ++r) for (long i = 0; i < n; ++i) y[i] = "
                "2.0f * x[i] + (float)r * 0.0f;"),
      doubling_bundles(bundle_dir_, 1, 64), options_);
  EXPECT_EQ(result.error_kind, "timeout");
  EXPECT_NE(result.error.find("trace cap"), std::string::npos) << result.error;
}

TEST_F(RvvRunnerTest, ReportsACrash) {
  const NativeRunResult result =
      run_rvv_candidate(candidate("crash", "*(volatile float*)0 = x[0];"),
                        doubling_bundles(bundle_dir_, 1, 8), options_);
  EXPECT_EQ(result.error_kind, "crash") << result.error;
  EXPECT_NE(result.error.find("SIGSEGV"), std::string::npos) << result.error;
}

TEST_F(RvvRunnerTest, ReportsANonzeroExit) {
  const auto path = files_ / "exits.c";
  std::ofstream(path) << "#include <stdlib.h>\n" << kPrologue << "exit(3);\n}\n";
  const NativeRunResult result =
      run_rvv_candidate(path, doubling_bundles(bundle_dir_, 1, 8), options_);
  EXPECT_EQ(result.error_kind, "candidate_runtime") << result.error;
  EXPECT_NE(result.error.find("exit 3"), std::string::npos) << result.error;
}

TEST_F(RvvRunnerTest, AForwardThatExitsWithAForgedOutputFails) {
  const auto path = files_ / "forges.c";
  std::ofstream(path) << "#include <stdio.h>\n#include <stdlib.h>\n"
                      << kPrologue << R"(
  FILE* f = fopen("output.bin", "wb");
  const unsigned long header[2] = {0x54554f565652424dul, 0};
  fwrite(header, sizeof header, 1, f);
  for (long i = 0; i < n; ++i) { float v = 2.0f * x[i]; fwrite(&v, 4, 1, f); }
  fclose(f);
  exit(0);
}
)";
  const NativeRunResult result =
      run_rvv_candidate(path, doubling_bundles(bundle_dir_, 1, 8), options_);
  EXPECT_EQ(result.error_kind, "candidate_runtime") << result.error;
}

TEST_F(RvvRunnerTest, RejectsAnUnsupportedVlen) {
  options_.vlen = 100;
  const auto path = candidate("vector", kVectorDoubling);
  const BundleSet bundles = doubling_bundles(bundle_dir_, 1, 8);
  EXPECT_EQ(testing::error_of([&] { run_rvv_candidate(path, bundles, options_); }).code(),
            ExitCode::bad_input);
}

}  // namespace
}  // namespace mblast
