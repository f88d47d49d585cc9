// The OpenCL runner end to end: candidates run in the hidden `mblast internal opencl-run` child on
// PoCL (or whatever OpenCL device is first), with their failures classified.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>

#include "opencl/opencl_backend.hpp"
#include "opencl/opencl_candidate.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_native_backend.hpp"
#include "opencl/workgroup_sweep.hpp"
#include "test_support.hpp"

namespace mblast::opencl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr std::int64_t kSize = 1024;

Tensor tensor(const std::string& name, TensorRole role, DType dtype,
              const std::vector<double>& values) {
  return testing::make_tensor(name, role, dtype, {static_cast<std::int64_t>(values.size())},
                              values);
}

// Bundles of the problem "output0 = 2 * input0" over kSize floats, one per seed.
BundleSet doubling_bundles(const TempDir& dir, int seeds = 2) {
  BundleSet set;
  set.dir = dir.path();
  for (int seed = 0; seed < seeds; ++seed) {
    std::vector<double> x(kSize), y(kSize);
    for (std::int64_t i = 0; i < kSize; ++i) {
      const auto index = static_cast<std::size_t>(i);
      x[index] = static_cast<float>(std::sin(static_cast<double>(i * (seed + 1))));
      y[index] = 2 * x[index];
    }
    Bundle bundle;
    bundle.tensors.push_back(tensor("input0", TensorRole::input, DType::f32, x));
    bundle.tensors.push_back(tensor("output0", TensorRole::expected, DType::f64, y));
    set.files.push_back(dir / ("seed-" + std::to_string(seed) + ".mbtb"));
    write_bundle(set.files.back(), bundle);
  }
  return set;
}

const std::string kPlan = R"(/* @launch
{"launches": [{"kernel": "twice", "global": [1024], "local": [64],
               "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]}
*/
)";

OpenClOptions fast_options() {
  OpenClOptions options;
  options.runs = 5;
  options.timeout = std::chrono::seconds(60);
  options.mblast_binary = testing::mblast_binary();
  return options;
}

class OpenClRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    if (list_devices().empty()) GTEST_SKIP() << "no OpenCL platform with a device";
    bundles_ = doubling_bundles(dir_);
  }

  NativeRunResult run(const std::string& text, const OpenClOptions& options = fast_options()) {
    const fs::path file = dir_ / "candidate.cl";
    std::ofstream(file) << text;
    return run_opencl_candidate(file, bundles_, options);
  }

  Comparison compare(const NativeRunResult& result, std::size_t seed) const {
    const Bundle bundle = read_bundle(bundles_.files.at(seed));
    return compare_outputs(bundle.with_role(TensorRole::expected), result.outputs.at(seed), 1e-4,
                           1e-4);
  }

  TempDir dir_;
  BundleSet bundles_;
};

TEST_F(OpenClRunner, CorrectKernelPassesOnEveryBundleAndIsTimed) {
  const auto result = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  y[i] = 2.0f * x[i];
})");
  ASSERT_EQ(result.error_kind, "") << result.error;
  ASSERT_EQ(result.outputs.size(), 2u);
  EXPECT_TRUE(compare(result, 0).pass) << compare(result, 0).error;
  EXPECT_TRUE(compare(result, 1).pass) << compare(result, 1).error;
  EXPECT_EQ(result.outputs[0][0].role, TensorRole::produced);
  EXPECT_EQ(result.timing.value("runs", 0), 5);
  EXPECT_GT(result.timing.value("median_ms", 0.0), 0.0);
  EXPECT_LE(result.timing.value("p10_ms", 0.0), result.timing.value("p90_ms", 0.0));
  EXPECT_FALSE(result.device_name.empty());
  EXPECT_GT(result.build_seconds, 0.0);
  EXPECT_EQ(result.details["launches"][0]["kernel"], "twice");
  EXPECT_TRUE(testing::no_children_left());
}

TEST_F(OpenClRunner, BuildErrorIsACompileErrorWithTheCompilersLog) {
  const auto result = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  y[get_global_id(0)] = 2.0f * x[get_global_id(0)] + not_declared;
})");
  EXPECT_EQ(result.error_kind, "compile");
  EXPECT_NE(result.error.find("not_declared"), std::string::npos) << result.error;
  EXPECT_TRUE(result.outputs.empty());
}

TEST_F(OpenClRunner, PlanThatDoesNotFitTheKernelsIsACompileError) {
  const std::string kernel = R"(
__kernel void twice(__global const float* x, __global float* y) {
  y[get_global_id(0)] = 2.0f * x[get_global_id(0)];
})";
  const auto plan = [](const std::string& launch) {
    return "/* @launch {\"launches\": [" + launch + "]} */\n";
  };
  struct Case {
    std::string launch;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"kernel": "twice", "global": [1024], "args": [{"buffer": "input0"}, {"buffer": "out"}]})",
       "no buffer named \"out\""},
      {R"({"kernel": "thrice", "global": [1024], "args": []})", "no kernel named \"thrice\""},
      {R"({"kernel": "twice", "global": [1024], "args": [{"buffer": "input0"}]})",
       "takes 2 arguments but the plan passes 1"},
      {R"({"kernel": "twice", "global": [1024], "args": [{"buffer": "input0"}, {"int": 3}]})",
       "takes a {\"buffer\": NAME}, but the plan passes int 3"},
      {R"({"kernel": "twice", "global": [1024], "local": [4096],
           "args": [{"buffer": "input0"}, {"buffer": "output0"}]})",
       "local size 4096 does not divide global 1024"},
  };
  for (const auto& c : cases) {
    const auto result = run(plan(c.launch) + kernel);
    EXPECT_EQ(result.error_kind, "compile") << c.launch;
    EXPECT_NE(result.error.find(c.message), std::string::npos) << result.error;
  }
}

TEST_F(OpenClRunner, WrongAndMissingResultsAreCaughtByTheComparison) {
  const auto wrong = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  y[get_global_id(0)] = 2.001f * x[get_global_id(0)];
})");
  ASSERT_EQ(wrong.error_kind, "") << wrong.error;
  EXPECT_FALSE(compare(wrong, 0).pass);
  EXPECT_NE(compare(wrong, 0).error.find("differs"), std::string::npos);

  // Outputs are poisoned before each run: what a kernel leaves unwritten reads as NaN.
  const auto partial = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  if (i < 1000) y[i] = 2.0f * x[i];
})");
  ASSERT_EQ(partial.error_kind, "") << partial.error;
  EXPECT_FALSE(compare(partial, 0).pass);
  EXPECT_NE(compare(partial, 0).error.find("NaN"), std::string::npos) << compare(partial, 0).error;
}

TEST_F(OpenClRunner, HangingKernelIsKilledAtTheTimeoutWithNothingLeftBehind) {
  OpenClOptions options = fast_options();
  options.timeout = std::chrono::seconds(3);
  const auto start = std::chrono::steady_clock::now();
  const auto result = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  while (x[0] == x[0] || i < 2048) y[i] += 1.0f;  /* never ends, and is not dead code */
})",
                          options);
  EXPECT_EQ(result.error_kind, "timeout") << result.error;
  EXPECT_LT(testing::seconds_since(start), 20.0);
  EXPECT_TRUE(testing::no_children_left());
}

TEST_F(OpenClRunner, HangingRunnerDiesWithTheProcessThatStartedIt) {
  std::ofstream(dir_ / "hang.cl") << kPlan << R"(
__kernel void twice(__global const float* x, __global float* y) {
  while (x[0] == x[0]) y[get_global_id(0)] += 1.0f;
})";
  // The shell starts the runner in a session of its own (out of reach of a group kill), then
  // dies by SIGKILL as a driver might.
  ProcessSpec spec;
  spec.argv = {"sh",
               "-c",
               "setsid \"$0\" internal opencl-run --candidate \"$1\" --bundle \"$2\" --out \"$3\" "
               "</dev/null >/dev/null 2>&1 & echo $!; sleep 1; kill -9 $$",
               testing::mblast_binary(),
               (dir_ / "hang.cl").string(),
               bundles_.files[0].string(),
               (dir_ / "out").string()};
  const ProcessResult shell = run_process(spec);
  ASSERT_EQ(shell.term_signal, SIGKILL) << shell.describe();
  const pid_t runner = std::stoi(shell.out);
  EXPECT_TRUE(testing::process_gone(runner)) << "the runner " << runner << " outlived its parent";
}

TEST_F(OpenClRunner, CrashingKernelIsReportedWithoutTakingTheCallerDown) {
  const auto result = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  y[i + ((size_t)1 << 42)] = x[i];  /* 16 TiB past the buffer */
})");
  EXPECT_EQ(result.error_kind, "crash") << result.error;
  EXPECT_NE(result.error.find("SIG"), std::string::npos) << result.error;
  EXPECT_TRUE(testing::no_children_left());
}

TEST_F(OpenClRunner, WritingToAnInputIsARuntimeError) {
  const auto result = run(kPlan + R"(
__kernel void twice(__global float* x, __global float* y) {
  const size_t i = get_global_id(0);
  x[i] *= 2.0f;
  y[i] = x[i];
})");
  EXPECT_EQ(result.error_kind, "candidate_runtime");
  EXPECT_NE(result.error.find("read-only"), std::string::npos) << result.error;
}

TEST_F(OpenClRunner, KernelPrintfDoesNotSpoilTheReport) {
  const auto result = run(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  if (i == 0) printf("{\"not\": \"the report\"}\n");
  y[i] = 2.0f * x[i];
})");
  ASSERT_EQ(result.error_kind, "") << result.error;
  EXPECT_TRUE(compare(result, 0).pass);
}

TEST_F(OpenClRunner, ScratchBuffersAndSeveralLaunchesRunInOrder) {
  const auto result = run(R"(/* @launch
{"buffers": [{"name": "tmp", "bytes": 4096}],
 "launches": [
  {"kernel": "scale", "global": [1024], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "tmp"}, {"float": 4.0}]},
  {"kernel": "halve", "global": [256], "local": [64],
   "args": [{"buffer": "tmp"}, {"buffer": "output0"}, {"int": 4}, {"local_bytes": 256}]}]}
*/
__kernel void scale(__global const float* x, __global float* tmp, float factor) {
  tmp[get_global_id(0)] = factor * x[get_global_id(0)];
}
__kernel void halve(__global const float* tmp, __global float* y, int per_item,
                    __local float* staging) {
  const size_t first = get_global_id(0) * per_item;
  staging[get_local_id(0)] = 0.5f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 0; k < per_item; ++k) y[first + k] = staging[get_local_id(0)] * tmp[first + k];
})");
  ASSERT_EQ(result.error_kind, "") << result.error;
  EXPECT_TRUE(compare(result, 0).pass) << compare(result, 0).error;
  EXPECT_EQ(result.details["launches"].size(), 2u);
}

TEST_F(OpenClRunner, UnknownDeviceIsAnInputErrorListingTheDevices) {
  OpenClOptions options = fast_options();
  options.device = "no-such-device-name";
  const Error error = testing::error_of([&] { run(kPlan, options); });
  EXPECT_EQ(error.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(error.what()).find("the devices are"), std::string::npos) << error.what();
}

TEST_F(OpenClRunner, ChildThatIsNotMblastCannotStartAnotherChild) {
  // What a runner child started from a test binary instead of mblast would find.
  const testing::ScopedEnv marker("MBLAST_OPENCL_RUNNER_CHILD", "1");
  const Error error = testing::error_of([&] { run(kPlan); });
  EXPECT_NE(std::string(error.what()).find("not mblast"), std::string::npos) << error.what();
}

TEST_F(OpenClRunner, DeviceSpecsSelectDevices) {
  const auto devices = list_devices();
  EXPECT_EQ(select_device("0:0").name, devices.front().name);
  EXPECT_EQ(select_device(devices.front().name.substr(0, 6)).name, devices.front().name);
  if (devices.front().is_cpu) {
    EXPECT_EQ(select_device("").name, devices.front().name);
  }
}

TEST_F(OpenClRunner, InternalSubcommandIsHiddenFromHelp) {
  const auto help = testing::run_mblast({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.find("internal"), std::string::npos);
  const auto usage = testing::run_mblast({"internal", "opencl-run", "--help"});
  EXPECT_EQ(usage.exit_code, 0);
  EXPECT_NE(usage.out.find("--candidate"), std::string::npos);
}

TEST_F(OpenClRunner, SweepPicksACorrectWorkGroupSizeThatDividesTheGlobalSize) {
  SweepOptions options;
  options.run = fast_options();
  const auto result = sweep_workgroup_sizes(kPlan + R"(
__kernel void twice(__global const float* x, __global float* y) {
  y[get_global_id(0)] = 2.0f * x[get_global_id(0)];
})",
                                            bundles_, options);
  ASSERT_TRUE(result.best.has_value()) << result.table().dump(1);
  // as written (64), null, 16, 32, 128, 256: 64 is already there.
  EXPECT_EQ(result.variants.size(), 6u) << result.table().dump(1);
  const SweepVariant& best = result.variants[*result.best];
  EXPECT_TRUE(best.correct);
  const Candidate chosen = parse_candidate(best.source);
  const auto& local = chosen.plan.launches[0].local;
  if (local) {
    EXPECT_EQ(1024 % (*local)[0], 0u);
  }
  for (const auto& row : result.table()) {
    EXPECT_TRUE(row["correct"].get<bool>()) << row.dump();
    EXPECT_GT(row["median_ms"].get<double>(), 0.0);
  }
}

TEST_F(OpenClRunner, SweepLeavesKernelsWithFixedWorkGroupSizesAlone) {
  SweepOptions options;
  options.run = fast_options();
  const Error error = testing::error_of([&] {
    sweep_workgroup_sizes(kPlan + R"(
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void twice(__global const float* x, __global float* y) {
  y[get_global_id(0)] = 2.0f * x[get_global_id(0)];
})",
                          bundles_, options);
  });
  EXPECT_NE(std::string(error.what()).find("does not apply"), std::string::npos) << error.what();
}

TEST_F(OpenClRunner, NativeBackendAssemblesMeasuresTheNaiveBaselineAndSweeps) {
  EvalOptions options;
  options.backend = "opencl";
  options.device = "";
  options.timing_runs = 5;
  auto backend = make_opencl_backend(options);
  EXPECT_EQ(backend->name(), "opencl");
  EXPECT_EQ(backend->extension(), ".cl");
  EXPECT_NE(backend->hardware().find(list_devices().front().name), std::string::npos);

  const std::string kernel = R"(
__kernel void twice(__global const float* x, __global float* y) {
  y[get_global_id(0)] = 2.0f * x[get_global_id(0)];
})";
  const std::string plan = R"({"launches": [{"kernel": "twice", "global": [1024], "local": [1],
    "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]})";
  const std::string candidate = backend->assemble({{"kernels.cl", kernel}, {"launch.json", plan}});
  EXPECT_EQ(parse_candidate(candidate).plan.launches[0].kernel, "twice");
  EXPECT_EQ(backend->assemble({{"candidate.cl", candidate}}), candidate);
  EXPECT_EQ(testing::error_of([&] {
              backend->assemble({{"kernels.cl", kernel}});
            }).code(),
            ExitCode::bad_input);

  // On a CPU device PyTorch on that CPU leads (what a user would otherwise run); the naive
  // baseline, the problem's <stem>.naive.cl timed like a candidate, follows.
  std::ofstream(dir_ / "twice.naive.cl") << candidate;
  bundles_.meta = {{"torch_cpu_ms", {{"median_ms", 0.5}}}, {"threads", 1}};
  const auto baselines = backend->baselines(dir_ / "twice.py", bundles_);
  ASSERT_EQ(baselines.size(), 2u);
  EXPECT_EQ(baselines[0].name, "torch_cpu");
  EXPECT_EQ(baselines[0].value, 0.5);
  EXPECT_NE(baselines[0].detail.find("1 threads"), std::string::npos);
  EXPECT_EQ(baselines[1].name, "naive_opencl");
  EXPECT_GT(baselines[1].value, 0.0);

  // One work-item per work-group is far slower than any size the sweep tries.
  const std::string swept =
      backend->builtin_variant("workgroup_size_sweep", dir_ / "twice.naive.cl", bundles_);
  const auto& local = parse_candidate(swept).plan.launches[0].local;
  EXPECT_TRUE(!local || (*local)[0] > 1) << swept;
  EXPECT_NE(swept.find(kernel), std::string::npos);
  EXPECT_EQ(testing::error_of([&] {
              backend->builtin_variant("unrolling", dir_ / "twice.naive.cl", bundles_);
            }).code(),
            ExitCode::job_failed);
}

}  // namespace
}  // namespace mblast::opencl
