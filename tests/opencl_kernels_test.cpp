// The OpenCL kernels shipped with mblast: the naive baseline of each native problem
// (benchmarks/problems/native/<stem>.naive.cl) and its optimized example
// (benchmarks/examples/native/<stem>.opt.cl) are correct, on bundles computed here in float64 and,
// where PyTorch is installed, on the bundles the Python worker makes. Each test prints both
// medians; MBLAST_OPENCL_BENCH_RUNS sets the number of timed runs (default 30).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

#include "mblast/python.hpp"
#include "opencl/opencl_backend.hpp"
#include "opencl/opencl_device.hpp"
#include "test_support.hpp"

namespace mblast::opencl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Shape = std::vector<std::int64_t>;

const fs::path kSource = MBLAST_SOURCE_DIR;

std::size_t count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto size : shape) n *= size;
  return static_cast<std::size_t>(n);
}

// Float32 values in a bundle tensor; the float64 reference is computed from these rounded values.
struct Values {
  std::string name;
  Shape shape;
  std::vector<double> data;
};

Values normal(const std::string& name, Shape shape, std::mt19937_64& rng) {
  std::normal_distribution<double> dist;
  Values v{name, shape, std::vector<double>(count(shape))};
  for (auto& x : v.data) x = static_cast<float>(dist(rng));
  return v;
}

Values uniform(const std::string& name, Shape shape, double bound, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-bound, bound);
  Values v{name, shape, std::vector<double>(count(shape))};
  for (auto& x : v.data) x = static_cast<float>(dist(rng));
  return v;
}

Tensor to_tensor(const Values& v, TensorRole role, DType dtype) {
  Tensor t;
  t.name = v.name;
  t.role = role;
  t.dtype = dtype;
  t.shape = v.shape;
  t.data.resize(v.data.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < v.data.size(); ++i) {
    if (dtype == DType::f32) {
      t.f32()[i] = static_cast<float>(v.data[i]);
    } else {
      reinterpret_cast<double*>(t.data.data())[i] = v.data[i];
    }
  }
  return t;
}

struct Problem {
  std::vector<Values> inputs;
  std::vector<Values> parameters;
  Values expected;
};

Problem swish(std::mt19937_64& rng) {
  Problem p{{normal("input0", {16384}, rng)}, {}, {"output0", {16384}, {}}};
  for (double x : p.inputs[0].data) p.expected.data.push_back(x / (1 + std::exp(-x)));
  return p;
}

Problem row_sum(std::mt19937_64& rng) {
  Problem p{{normal("input0", {64, 1024}, rng)}, {}, {"output0", {64}, {}}};
  for (std::size_t r = 0; r < 64; ++r) {
    double sum = 0;
    for (std::size_t c = 0; c < 1024; ++c) sum += p.inputs[0].data[r * 1024 + c];
    p.expected.data.push_back(sum);
  }
  return p;
}

Problem softmax(std::mt19937_64& rng) {
  Problem p{{normal("input0", {32, 512}, rng)}, {}, {"output0", {32, 512}, {}}};
  const auto& x = p.inputs[0].data;
  for (std::size_t r = 0; r < 32; ++r) {
    double max_value = -INFINITY, sum = 0;
    for (std::size_t c = 0; c < 512; ++c) max_value = std::max(max_value, x[r * 512 + c]);
    for (std::size_t c = 0; c < 512; ++c) sum += std::exp(x[r * 512 + c] - max_value);
    for (std::size_t c = 0; c < 512; ++c) {
      p.expected.data.push_back(std::exp(x[r * 512 + c] - max_value) / sum);
    }
  }
  return p;
}

Problem matmul(std::mt19937_64& rng) {
  Problem p{{normal("input0", {64, 64}, rng), normal("input1", {64, 64}, rng)},
            {},
            {"output0", {64, 64}, {}}};
  const auto& a = p.inputs[0].data;
  const auto& b = p.inputs[1].data;
  for (std::size_t i = 0; i < 64; ++i) {
    for (std::size_t j = 0; j < 64; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 64; ++k) sum += a[i * 64 + k] * b[k * 64 + j];
      p.expected.data.push_back(sum);
    }
  }
  return p;
}

Problem conv1d(std::mt19937_64& rng) {
  constexpr std::size_t batch = 2, cin = 8, cout = 16, length = 256, ksize = 5;
  constexpr std::size_t out_length = length - ksize + 1;
  const double bound = 1 / std::sqrt(static_cast<double>(cin * ksize));  // PyTorch's init range
  Problem p{{normal("input0", {batch, cin, length}, rng)},
            {uniform("conv.weight", {cout, cin, ksize}, bound, rng),
             uniform("conv.bias", {cout}, bound, rng)},
            {"output0", {batch, cout, out_length}, {}}};
  const auto& x = p.inputs[0].data;
  const auto& w = p.parameters[0].data;
  const auto& bias = p.parameters[1].data;
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t co = 0; co < cout; ++co) {
      for (std::size_t l = 0; l < out_length; ++l) {
        double sum = bias[co];
        for (std::size_t ci = 0; ci < cin; ++ci) {
          for (std::size_t k = 0; k < ksize; ++k) {
            sum += w[(co * cin + ci) * ksize + k] * x[(b * cin + ci) * length + l + k];
          }
        }
        p.expected.data.push_back(sum);
      }
    }
  }
  return p;
}

struct Case {
  std::string stem;
  std::function<Problem(std::mt19937_64&)> make;
};

// Names the case in test listings (ctest shows the parameter).
void PrintTo(const Case& c, std::ostream* out) { *out << c.stem; }

BundleSet write_bundles(const Case& c, const TempDir& dir, int seeds) {
  BundleSet set;
  set.dir = dir.path();
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    const Problem p = c.make(rng);
    Bundle bundle;
    for (const auto& v : p.inputs)
      bundle.tensors.push_back(to_tensor(v, TensorRole::input, DType::f32));
    for (const auto& v : p.parameters) {
      bundle.tensors.push_back(to_tensor(v, TensorRole::parameter, DType::f32));
    }
    bundle.tensors.push_back(to_tensor(p.expected, TensorRole::expected, DType::f64));
    set.files.push_back(dir / (c.stem + "-" + std::to_string(seed) + ".mbtb"));
    write_bundle(set.files.back(), bundle);
  }
  return set;
}

int timed_runs() {
  const char* runs = std::getenv("MBLAST_OPENCL_BENCH_RUNS");
  return runs != nullptr && *runs != '\0' ? std::atoi(runs) : 30;
}

fs::path naive_kernel(const std::string& stem) {
  return kSource / "benchmarks/problems/native" / (stem + ".naive.cl");
}
fs::path optimized_kernel(const std::string& stem) {
  return kSource / "benchmarks/examples/native" / (stem + ".opt.cl");
}

// Runs the kernel on the bundles; checks every seed under the given tolerance. Returns the median.
double check_kernel(const fs::path& kernel, const BundleSet& bundles, double atol, double rtol) {
  OpenClOptions options;
  options.runs = timed_runs();
  options.mblast_binary = testing::mblast_binary();
  const NativeRunResult result = run_opencl_candidate(kernel, bundles, options);
  EXPECT_EQ(result.error_kind, "") << kernel << ": " << result.error;
  EXPECT_EQ(result.outputs.size(), bundles.files.size()) << kernel;
  for (std::size_t i = 0; i < bundles.files.size() && i < result.outputs.size(); ++i) {
    const Bundle bundle = read_bundle(bundles.files[i]);
    const Comparison c =
        compare_outputs(bundle.with_role(TensorRole::expected), result.outputs[i], atol, rtol);
    EXPECT_TRUE(c.pass) << kernel << " seed index " << i << ": " << c.error;
  }
  return result.timing.value("median_ms", 0.0);
}

class OpenClKernels : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (list_devices().empty()) GTEST_SKIP() << "no OpenCL platform with a device";
  }
};

TEST_P(OpenClKernels, NaiveAndOptimizedAreCorrectOnFloat64References) {
  const TempDir dir;
  const BundleSet bundles = write_bundles(GetParam(), dir, 2);
  const double naive = check_kernel(naive_kernel(GetParam().stem), bundles, 1e-4, 1e-4);
  const double optimized = check_kernel(optimized_kernel(GetParam().stem), bundles, 1e-4, 1e-4);
  std::printf("[ timing   ] %-8s naive %.4f ms, optimized %.4f ms, speedup %.2fx (%d runs)\n",
              GetParam().stem.c_str(), naive, optimized, naive / optimized, timed_runs());
}

TEST_P(OpenClKernels, NaiveAndOptimizedAreCorrectOnTheWorkersBundles) {
  const auto python = find_torch_python();
  if (!python) GTEST_SKIP() << "no Python with torch to make the bundles";
  const TempDir dir;
  const fs::path problem = kSource / "benchmarks/problems/native" / (GetParam().stem + ".py");
  const BundleSet bundles = make_bundles(problem, 2, 1, dir / "cache", *python, 1);
  // The precision policy: never stricter than 1.5x PyTorch's own fp32 error.
  const auto eager = bundles.meta.value("eager", nlohmann::json::object());
  const double atol = std::max(1e-4, 1.5 * eager.value("max_abs_err", 0.0));
  const double rtol = std::max(1e-4, 1.5 * eager.value("max_rel_err", 0.0));
  check_kernel(naive_kernel(GetParam().stem), bundles, atol, rtol);
  check_kernel(optimized_kernel(GetParam().stem), bundles, atol, rtol);
}

INSTANTIATE_TEST_SUITE_P(NativeProblems, OpenClKernels,
                         ::testing::Values(Case{"swish", swish}, Case{"row_sum", row_sum},
                                           Case{"softmax", softmax}, Case{"matmul", matmul},
                                           Case{"conv1d", conv1d}),
                         [](const auto& param_info) { return param_info.param.stem; });

}  // namespace
}  // namespace mblast::opencl
