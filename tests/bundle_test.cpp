// Tensor bundles: made by the Python worker from a problem, read by the native runners, and the
// comparison the judge applies to their outputs.
#include "native/bundle.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "mblast/python.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

Tensor f32_tensor(const std::string& name, TensorRole role, std::vector<std::int64_t> shape,
                  const std::vector<double>& values) {
  return testing::make_tensor(name, role, DType::f32, std::move(shape), values);
}

Tensor f64_tensor(const std::string& name, std::vector<std::int64_t> shape,
                  const std::vector<double>& values) {
  return testing::make_tensor(name, TensorRole::expected, DType::f64, std::move(shape), values);
}

TEST(Bundle, WriteReadRoundTrip) {
  TempDir dir;
  Bundle bundle;
  bundle.tensors.push_back(f32_tensor("input0", TensorRole::input, {2, 3}, {1, 2, 3, 4, 5, 6}));
  bundle.tensors.push_back(f32_tensor("w", TensorRole::parameter, {}, {0.5f}));  // rank 0
  bundle.tensors.push_back(f64_tensor("output0", {3}, {1.5, -2.25, 1e-300}));
  write_bundle(dir / "b.mbtb", bundle);
  const Bundle back = read_bundle(dir / "b.mbtb");
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.tensors[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(back.tensors[0].as_f64()[5], 6.0);
  EXPECT_EQ(back.tensors[1].numel(), 1);
  EXPECT_EQ(back.tensors[1].as_f64()[0], 0.5);
  EXPECT_EQ(back.tensors[2].dtype, DType::f64);
  EXPECT_EQ(back.tensors[2].as_f64()[2], 1e-300);
  EXPECT_EQ(back.with_role(TensorRole::parameter).size(), 1u);
}

TEST(Bundle, DamagedFilesAreInputErrorsNamingTheFile) {
  TempDir dir;
  std::ofstream(dir / "bad.mbtb") << "MBTBNDL1\x05";
  const Error e = testing::error_of([&] { read_bundle(dir / "bad.mbtb"); });
  EXPECT_EQ(e.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(e.what()).find("bad.mbtb"), std::string::npos);
  std::ofstream(dir / "magic.mbtb") << "NOTABUNDLE";
  EXPECT_THROW(read_bundle(dir / "magic.mbtb"), Error);
}

TEST(Bundle, ComparisonAppliesThePolicyAndReportsWhere) {
  const Tensor want = f64_tensor("output0", {2, 2}, {1.0, 2.0, 3.0, 4.0});
  const std::vector<const Tensor*> expected = {&want};
  auto produced = [](std::vector<double> v) {
    return std::vector<Tensor>{f32_tensor("output0", TensorRole::produced, {2, 2}, v)};
  };
  auto ok = compare_outputs(expected, produced({1.0f, 2.0f, 3.0f, 4.0001f}), 1e-3, 1e-3);
  EXPECT_TRUE(ok.pass) << ok.error;
  EXPECT_NEAR(ok.max_abs_err, 1e-4, 1e-6);

  auto wrong = compare_outputs(expected, produced({1.0f, 2.0f, 3.5f, 4.0f}), 1e-3, 1e-3);
  EXPECT_FALSE(wrong.pass);
  EXPECT_EQ(wrong.location["index"], nlohmann::json({1, 0}));
  EXPECT_NE(wrong.error.find("differs at [1,0]"), std::string::npos) << wrong.error;

  auto nan = compare_outputs(expected, produced({1.0f, NAN, 3.0f, 4.0f}), 1e-3, 1e-3);
  EXPECT_FALSE(nan.pass);
  EXPECT_NE(nan.error.find("NaN"), std::string::npos);

  auto shape = compare_outputs(
      expected, {f32_tensor("output0", TensorRole::produced, {4}, {1, 2, 3, 4})}, 1e-3, 1e-3);
  EXPECT_FALSE(shape.pass);
  EXPECT_NE(shape.error.find("shape (4)"), std::string::npos) << shape.error;
}

TEST(Bundle, MadeFromAProblemByTheWorkerAndCached) {
  auto python = find_torch_python();
  if (!python) GTEST_SKIP() << "no Python with torch";
  TempDir dir;
  testing::ScopedEnv cache("XDG_CACHE_HOME", (dir / "xdg").string());
  const fs::path problem = fs::path(MBLAST_SOURCE_DIR) / "benchmarks/problems/native/conv1d.py";
  const BundleSet set = make_bundles(problem, 2, 7, dir / "cache", *python, 3);
  ASSERT_EQ(set.files.size(), 2u);
  EXPECT_EQ(set.meta["parameters"][0]["name"], "conv.weight");
  EXPECT_GT(set.meta["torch_cpu_ms"]["median_ms"].get<double>(), 0.0);
  // The worker's tolerance rule, which the native judges apply without repeating it.
  EXPECT_GE(set.meta["eager"]["widen_floor"].get<double>(),
            set.meta["eager"]["policy_err"].get<double>());
  const Bundle seed7 = read_bundle(set.files[0]);
  ASSERT_EQ(seed7.with_role(TensorRole::input).size(), 1u);
  ASSERT_EQ(seed7.with_role(TensorRole::parameter).size(), 2u);
  const auto expected = seed7.with_role(TensorRole::expected);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(expected[0]->shape, (std::vector<std::int64_t>{2, 16, 252}));
  EXPECT_EQ(expected[0]->dtype, DType::f64);
  // Different seeds, different inputs; the same call again comes from the cache.
  EXPECT_NE(read_bundle(set.files[1]).tensors[0].as_f64(), seed7.tensors[0].as_f64());
  const auto stamp = fs::last_write_time(set.files[0]);
  const BundleSet again = make_bundles(problem, 2, 7, dir / "cache", *python, 3);
  EXPECT_EQ(fs::last_write_time(again.files[0]), stamp);

  std::ofstream(dir / "broken.py") << "class Model(:\n";
  const Error e =
      testing::error_of([&] { make_bundles(dir / "broken.py", 1, 1, dir / "cache", *python, 1); });
  EXPECT_EQ(e.code(), ExitCode::bad_input);
}

}  // namespace
}  // namespace mblast
