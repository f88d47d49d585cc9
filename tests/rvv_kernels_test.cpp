// The five native problems (benchmarks/problems/native) on the RVV backend: the plain C
// baselines at -O2 scalar and -O3 autovectorized, and the RVV intrinsics kernels
// (benchmarks/examples/native), all checked against float64 references computed here, and the
// LMUL / unroll sweep. Skipped where the RVV toolchain or qemu-riscv64 is missing.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mblast/eval_options.hpp"
#include "native/bundle.hpp"
#include "rvv/rvv_native_backend.hpp"
#include "rvv/rvv_runner.hpp"
#include "rvv/rvv_sweep.hpp"
#include "rvv/rvv_toolchain.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Values = std::vector<double>;

struct Input {
  std::string name;
  std::vector<std::int64_t> shape;
  float scale = 0;  // 0: standard normal; else uniform in (-scale, scale), like PyTorch's init
};

// A problem's shapes (as in its .py file) and its float64 reference.
struct Problem {
  std::string stem;
  std::vector<Input> inputs;
  std::vector<std::int64_t> output_shape;
  std::function<Values(const std::vector<Values>&)> reference;
};

Values swish(const std::vector<Values>& in) {
  Values y;
  for (double x : in[0]) y.push_back(x / (1.0 + std::exp(-x)));
  return y;
}

Values row_sum(const std::vector<Values>& in) {
  Values y(64, 0.0);
  for (std::size_t i = 0; i < in[0].size(); ++i) y[i / 1024] += in[0][i];
  return y;
}

Values softmax(const std::vector<Values>& in) {
  const std::size_t cols = 512;
  Values y(in[0].size());
  for (std::size_t r = 0; r < in[0].size() / cols; ++r) {
    double max = -INFINITY, sum = 0;
    for (std::size_t c = 0; c < cols; ++c) max = std::max(max, in[0][r * cols + c]);
    for (std::size_t c = 0; c < cols; ++c)
      sum += y[r * cols + c] = std::exp(in[0][r * cols + c] - max);
    for (std::size_t c = 0; c < cols; ++c) y[r * cols + c] /= sum;
  }
  return y;
}

Values matmul(const std::vector<Values>& in) {
  const std::size_t n = 64;
  Values c(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += in[0][i * n + p] * in[1][p * n + j];
  return c;
}

Values conv1d(const std::vector<Values>& in) {
  const std::size_t batch = 2, cin = 8, cout = 16, length = 256, kernel = 5;
  const std::size_t out_len = length - kernel + 1;
  Values y(batch * cout * out_len);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t o = 0; o < cout; ++o)
      for (std::size_t t = 0; t < out_len; ++t) {
        double acc = in[2][o];
        for (std::size_t c = 0; c < cin; ++c)
          for (std::size_t k = 0; k < kernel; ++k)
            acc += in[1][(o * cin + c) * kernel + k] * in[0][(b * cin + c) * length + t + k];
        y[(b * cout + o) * out_len + t] = acc;
      }
  return y;
}

const std::vector<Problem>& problems() {
  static const float conv_bound = 1.0f / std::sqrt(8.0f * 5.0f);
  static const std::vector<Problem> all = {
      {"swish", {{"input0", {16384}}}, {16384}, swish},
      {"row_sum", {{"input0", {64, 1024}}}, {64}, row_sum},
      {"softmax", {{"input0", {32, 512}}}, {32, 512}, softmax},
      {"matmul", {{"input0", {64, 64}}, {"input1", {64, 64}}}, {64, 64}, matmul},
      {"conv1d",
       {{"input0", {2, 8, 256}},
        {"conv.weight", {16, 8, 5}, conv_bound},
        {"conv.bias", {16}, conv_bound}},
       {2, 16, 252},
       conv1d},
  };
  return all;
}

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

BundleSet make_problem_bundles(const Problem& problem, const fs::path& dir, int seeds) {
  BundleSet set;
  set.dir = dir;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937 random(static_cast<unsigned>(seed));
    Bundle bundle;
    std::vector<Values> values;
    for (const Input& input : problem.inputs) {
      std::normal_distribution<float> normal;
      std::uniform_real_distribution<float> uniform(-input.scale, input.scale);
      std::vector<float> data(static_cast<std::size_t>(numel(input.shape)));
      for (float& v : data) v = input.scale == 0 ? normal(random) : uniform(random);
      Tensor t;
      t.name = input.name;
      t.role = input.name.starts_with("input") ? TensorRole::input : TensorRole::parameter;
      t.shape = input.shape;
      t.data.resize(data.size() * sizeof(float));
      std::memcpy(t.data.data(), data.data(), t.data.size());
      values.emplace_back(data.begin(), data.end());
      bundle.tensors.push_back(std::move(t));
    }
    const Values expected = problem.reference(values);
    Tensor out;
    out.name = "output0";
    out.role = TensorRole::expected;
    out.dtype = DType::f64;
    out.shape = problem.output_shape;
    out.data.resize(expected.size() * sizeof(double));
    std::memcpy(out.data.data(), expected.data(), out.data.size());
    bundle.tensors.push_back(std::move(out));
    set.files.push_back(dir / (problem.stem + "-seed-" + std::to_string(seed) + ".mbtb"));
    write_bundle(set.files.back(), bundle);
  }
  return set;
}

fs::path source_dir() { return MBLAST_SOURCE_DIR; }

void expect_correct(const NativeRunResult& run, const BundleSet& bundles, const std::string& what) {
  ASSERT_EQ(run.error_kind, "") << what << ": " << run.error;
  ASSERT_EQ(run.outputs.size(), bundles.files.size());
  for (std::size_t i = 0; i < bundles.files.size(); ++i) {
    const Bundle bundle = read_bundle(bundles.files[i]);
    const Comparison c =
        compare_outputs(bundle.with_role(TensorRole::expected), run.outputs[i], 1e-4, 1e-4);
    EXPECT_TRUE(c.pass) << what << ": " << c.error;
  }
}

class RvvKernelsTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    std::string why;
    if (!rvv::find_toolchain(&why)) GTEST_SKIP() << "no RVV toolchain: " << why;
    options_.cache_dir = cache_.path();
  }
  TempDir cache_;
  TempDir bundle_dir_;
  RvvOptions options_;
};

TEST_P(RvvKernelsTest, BaselinesAndRvvKernelAreCorrectAndTheKernelIsCheaper) {
  const Problem& problem = problems()[GetParam()];
  const BundleSet bundles = make_problem_bundles(problem, bundle_dir_.path(), 2);
  const fs::path py = source_dir() / "benchmarks/problems/native" / (problem.stem + ".py");
  const RvvBaselines baselines = run_rvv_baselines(rvv_baseline_source(py), bundles, options_);
  expect_correct(baselines.scalar, bundles, "scalar -O2");
  expect_correct(baselines.autovec, bundles, "autovectorized -O3");

  const fs::path kernel = source_dir() / "benchmarks/examples/native" / (problem.stem + ".rvv.c");
  const NativeRunResult rvv = run_rvv_candidate(kernel, bundles, options_);
  expect_correct(rvv, bundles, "RVV kernel");
  if (HasFailure()) return;

  const double scalar_cost = baselines.scalar.timing["cost"].get<double>();
  const double autovec_cost = baselines.autovec.timing["cost"].get<double>();
  const double rvv_cost = rvv.timing["cost"].get<double>();
  EXPECT_EQ(baselines.scalar.timing["vector_instructions"], 0);
  EXPECT_LT(rvv_cost * 2, scalar_cost);
  const auto seconds = [](const NativeRunResult& r) { return r.build_seconds + r.run_seconds; };
  std::cout << "[ cost ] " << problem.stem << " scalar_O2=" << scalar_cost
            << " autovec_O3=" << autovec_cost << " rvv=" << rvv_cost
            << " eval_s(scalar,autovec,rvv)=" << seconds(baselines.scalar) << ","
            << seconds(baselines.autovec) << "," << seconds(rvv) << "\n";

  const NativeRunResult again = run_rvv_candidate(kernel, bundles, options_);
  EXPECT_EQ(again.timing, rvv.timing);
}

INSTANTIATE_TEST_SUITE_P(Problems, RvvKernelsTest, ::testing::Range<std::size_t>(0, 5),
                         [](const auto& param_info) { return problems()[param_info.param].stem; });

TEST(RvvSweepTest, PicksTheCheapestCorrectVariant) {
  std::string why;
  if (!rvv::find_toolchain(&why)) GTEST_SKIP() << "no RVV toolchain: " << why;
  TempDir cache, bundle_dir;
  RvvOptions options;
  options.cache_dir = cache.path();
  const Problem& problem = problems()[3];  // matmul: both knobs
  const BundleSet bundles = make_problem_bundles(problem, bundle_dir.path(), 1);
  const fs::path kernel = source_dir() / "benchmarks/examples/native/matmul.rvv.c";
  const RvvSweepResult sweep = sweep_rvv_candidate(kernel, bundles, options);
  ASSERT_EQ(sweep.variants.size(), 13u);  // as written, then 4 LMULs x 3 unroll factors
  EXPECT_EQ(sweep.variants[0].lmul, 0);
  ASSERT_TRUE(sweep.best.has_value()) << sweep.table().dump(2);
  const RvvVariant& best = sweep.variants[*sweep.best];
  EXPECT_TRUE(best.correct);
  for (const auto& v : sweep.variants) {
    EXPECT_TRUE(v.correct) << v.lmul << "/" << v.unroll << ": " << v.error;
    EXPECT_LE(best.cost, v.cost);
  }
  std::cout << "[ sweep ] " << sweep.table().dump() << "\n";

  // The winner's source, with its values defined in it, costs what the sweep measured.
  std::ifstream in(kernel);
  const std::string source((std::istreambuf_iterator<char>(in)), {});
  const fs::path winner = bundle_dir / "winner.c";
  std::ofstream(winner) << sweep.best_source(source);
  const NativeRunResult rerun = run_rvv_candidate(winner, bundles, options);
  ASSERT_EQ(rerun.error_kind, "") << rerun.error;
  EXPECT_EQ(rerun.timing["cost"].get<double>(), best.cost);
}

TEST(RvvSweepTest, DoesNotApplyWithoutKnobs) {
  std::string why;
  if (!rvv::find_toolchain(&why)) GTEST_SKIP() << "no RVV toolchain: " << why;
  TempDir dir;
  const Problem& problem = problems()[0];
  const BundleSet bundles = make_problem_bundles(problem, dir.path(), 1);
  const fs::path plain = source_dir() / "benchmarks/problems/native/swish.c";
  EXPECT_EQ(testing::error_of([&] { sweep_rvv_candidate(plain, bundles, RvvOptions{}); }).code(),
            ExitCode::job_failed);
  EXPECT_EQ(rvv_sweep_knobs("#define X MBLAST_LMUL"), std::vector<std::string>{"MBLAST_LMUL"});
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(RvvBackendTest, MeasuresBothBaselinesAndAppliesTheLmulChoice) {
  std::string why;
  if (!rvv::find_toolchain(&why)) GTEST_SKIP() << "no RVV toolchain: " << why;
  TempDir cache, dir;
  EvalOptions options;
  options.backend = "rvv";
  options.cache_dir = cache.path();
  const auto backend = rvv::make_rvv_backend(options);
  EXPECT_EQ(backend->name(), "rvv");
  EXPECT_EQ(backend->hardware(), "qemu rv64gcv vlen=256 dlen=128");
  const Problem& problem = problems()[1];  // row_sum
  const BundleSet bundles = make_problem_bundles(problem, dir.path(), 1);
  const auto baselines =
      backend->baselines(source_dir() / "benchmarks/problems/native/row_sum.py", bundles);
  // The headline is the cheaper of the two compiler builds; both follow as columns of their own.
  ASSERT_EQ(baselines.size(), 3u);
  EXPECT_EQ(baselines[0].name, "best_c");
  EXPECT_EQ(baselines[1].name, "scalar_c_O2");
  EXPECT_EQ(baselines[2].name, "autovec_c_O3");
  EXPECT_EQ(baselines[0].unit, "cost");
  EXPECT_GT(baselines[0].value, 0);
  EXPECT_EQ(baselines[0].value, std::min(baselines[1].value, baselines[2].value));

  // The kernel written at LMUL 1: the sweep finds a cheaper LMUL and says which in the source.
  std::string source = read_text(source_dir() / "benchmarks/examples/native/row_sum.rvv.c");
  const auto at = source.find("#define MBLAST_LMUL 8");
  ASSERT_NE(at, std::string::npos);
  source.replace(at, 21, "#define MBLAST_LMUL 1");
  const fs::path lmul1 = dir / "row_sum_m1.c";
  std::ofstream(lmul1) << source;
  const std::string variant = backend->builtin_variant("lmul_choice", lmul1, bundles);
  EXPECT_TRUE(variant.starts_with("#define MBLAST_LMUL ")) << variant.substr(0, 80);
  EXPECT_FALSE(variant.starts_with("#define MBLAST_LMUL 1\n"));

  EXPECT_EQ(
      testing::error_of([&] { backend->builtin_variant("unroll_choice", lmul1, bundles); }).code(),
      ExitCode::job_failed);
  EXPECT_EQ(backend->assemble({{"notes.md", "x"}, {"kernel.c", "int x;"}}), "int x;");
}

}  // namespace
}  // namespace mblast
