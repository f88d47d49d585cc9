// The native signatures classify: each of the five native problems, for its baseline (the naive
// OpenCL kernel; the better C build on RVV) and its optimized kernel, run by the real backends
// (OpenCL on the machine's device, RVV under QEMU) on the Python worker's bundles, lands in a
// named state of the seed catalogue, with the speed-of-light evidence behind it. Each case
// prints its state and evidence ("[ state ]" lines): the table in the issue is made from them.
#include <gtest/gtest.h>

#include <cstdio>

#include "mblast/eval_options.hpp"
#include "mblast/kb.hpp"
#include "mblast/policy.hpp"
#include "mblast/python.hpp"
#include "native/bundle.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_native_backend.hpp"
#include "rvv/rvv_native_backend.hpp"
#include "rvv/rvv_toolchain.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const fs::path kSource = MBLAST_SOURCE_DIR;
const char* const kProblems[] = {"softmax", "swish", "row_sum", "matmul", "conv1d"};

std::vector<StateRow> seed_states() {
  const TempDir dir;
  return KnowledgeBase(dir / "kb.sqlite").states();
}

// Classifies `signature` and checks what every native signature must carry for it.
void expect_named_state(const nlohmann::json& signature, const std::string& what) {
  static const std::vector<StateRow> states = seed_states();
  for (const char* metric : {"sol_fraction", "memory_sol_fraction", "compute_sol_fraction",
                             "arithmetic_intensity", "min_bytes", "flops"}) {
    EXPECT_TRUE(signature.contains(metric) && signature[metric].is_number())
        << what << " has no " << metric << ": " << signature.dump();
  }
  const Classification c = classify(states, ProfileSignature::from_json(signature).metrics());
  EXPECT_NE(c.state_id, "unclassified") << what << ": " << signature.dump();
  bool sol_evidence = false;
  for (const auto& e : c.evidence) {
    EXPECT_TRUE(e.value.has_value()) << what << ": " << c.explain();
    sol_evidence = sol_evidence || e.metric.find("sol_fraction") != std::string::npos;
  }
  EXPECT_TRUE(sol_evidence) << what
                            << " classified without a speed-of-light figure: " << c.explain();
  std::string more;
  for (const char* metric : {"kernel_count", "launch_overhead_fraction", "achieved_gbs",
                             "device_bandwidth_gbs", "device_gflops", "vector_instruction_fraction",
                             "vector_bytes_fraction", "access_bytes_ratio"}) {
    if (!signature.contains(metric)) continue;
    char text[80];
    std::snprintf(text, sizeof text, " %s=%.4g", metric, signature[metric].get<double>());
    more += text;
  }
  std::printf("[ state ] %-28s -> %s (%s);%s\n", what.c_str(), c.state_id.c_str(),
              c.explain().c_str(), more.c_str());
}

nlohmann::json baseline_signature(NativeBackend& backend, const fs::path& problem,
                                  const BundleSet& bundles, const std::string& name) {
  for (const auto& b : backend.baselines(problem, bundles)) {
    if (b.name == name) return b.signature;
  }
  ADD_FAILURE() << "no baseline " << name << " for " << problem;
  return nlohmann::json::object();
}

nlohmann::json run_signature(NativeBackend& backend, const fs::path& candidate,
                             const BundleSet& bundles) {
  const NativeRunResult run = backend.run(candidate, bundles);
  EXPECT_EQ(run.error_kind, "") << candidate << ": " << run.error;
  return backend.signature(run, bundles);
}

class NativeStates : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    python_ = find_torch_python();
    if (!python_) GTEST_SKIP() << "no Python with torch to make the bundles";
    options_.problem = kSource / "benchmarks/problems/native" / (std::string(GetParam()) + ".py");
    options_.cache_dir = cache_.path();
    options_.device = "cpu";
    options_.timing_runs = 10;
    bundles_ = make_bundles(options_.problem, 1, 1, cache_.path(), *python_, 1);
  }
  fs::path example(const std::string& suffix) const {
    return kSource / "benchmarks/examples/native" / (std::string(GetParam()) + suffix);
  }

  std::optional<fs::path> python_;
  TempDir cache_;
  EvalOptions options_;
  BundleSet bundles_;
};

TEST_P(NativeStates, OpenClBaselineAndOptimizedKernelLandInNamedStates) {
  if (opencl::list_devices().empty()) GTEST_SKIP() << "no OpenCL platform with a device";
  options_.backend = "opencl";
  const auto backend = opencl::make_opencl_backend(options_);
  const auto naive = baseline_signature(*backend, options_.problem, bundles_, "naive_opencl");
  expect_named_state(naive, std::string("opencl ") + GetParam() + " naive");
  const auto optimized = run_signature(*backend, example(".opt.cl"), bundles_);
  expect_named_state(optimized, std::string("opencl ") + GetParam() + " optimized");
  for (const auto* signature : {&naive, &optimized}) {
    EXPECT_GT(signature->value("kernel_count", 0.0), 0) << signature->dump();
    EXPECT_GT(signature->value("device_bandwidth_gbs", 0.0), 0) << signature->dump();
    double shares = 0;
    for (const auto& kernel : signature->value("kernels", nlohmann::json::array())) {
      shares += kernel.value("share", 0.0);
    }
    EXPECT_NEAR(shares, 1.0, 1e-9) << "kernel time shares: " << signature->dump();
  }
}

TEST_P(NativeStates, RvvBaselineAndOptimizedKernelLandInNamedStates) {
  std::string why;
  if (!rvv::find_toolchain(&why)) GTEST_SKIP() << "no RVV toolchain: " << why;
  options_.backend = "rvv";
  const auto backend = rvv::make_rvv_backend(options_);
  const auto best_c = baseline_signature(*backend, options_.problem, bundles_, "best_c");
  expect_named_state(best_c, std::string("rvv ") + GetParam() + " best_c");
  const auto optimized = run_signature(*backend, example(".rvv.c"), bundles_);
  expect_named_state(optimized, std::string("rvv ") + GetParam() + " optimized");
  for (const auto* signature : {&best_c, &optimized}) {
    for (const char* metric : {"vector_instruction_fraction", "access_bytes_ratio", "cost"}) {
      EXPECT_TRUE(signature->contains(metric)) << metric << ": " << signature->dump();
    }
    // Every input and output is read or written at least once.
    EXPECT_GE(signature->value("access_bytes_ratio", 0.0), 1.0) << signature->dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, NativeStates, ::testing::ValuesIn(kProblems),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace mblast
