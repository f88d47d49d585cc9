// The native judge on a scripted backend: correctness under the precision policy, failures
// passed through as the CUDA judge reports them, and speedups against every baseline.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "native/native_eval.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

Tensor tensor(const std::string& name, TensorRole role, DType dtype,
              const std::vector<double>& values) {
  return testing::make_tensor(name, role, dtype, {static_cast<std::int64_t>(values.size())},
                              values);
}

// Test double behind the real interface: returns what the test scripts.
class ScriptedBackend : public NativeBackend {
 public:
  NativeRunResult next;
  std::vector<NativeBaseline> base = {{"torch_cpu", 2.0, "ms", ""},
                                      {"naive_opencl", 4.0, "ms", ""}};
  std::string name() const override { return "opencl"; }
  NativeRunResult run(const fs::path&, const BundleSet&) override { return next; }
  // What the judge asked to profile: the signature names the run's cost.
  nlohmann::json signature(const NativeRunResult& run, const BundleSet&) override {
    ++signatures;
    return {{"cost", run.timing.value("cost", 0.0)}};
  }
  int signatures = 0;
  std::vector<NativeBaseline> baselines(const fs::path&, const BundleSet&) override { return base; }
  std::string hardware() override { return "scripted"; }
  std::string extension() const override { return ".cl"; }
  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    return files.front().second;
  }
  std::string builtin_variant(const std::string&, const fs::path& candidate,
                              const BundleSet&) override {
    return candidate.string();
  }
};

class NativeEval : public ::testing::Test {
 protected:
  void SetUp() override {
    Bundle b;
    b.tensors.push_back(tensor("input0", TensorRole::input, DType::f32, {1, 2}));
    b.tensors.push_back(tensor("output0", TensorRole::expected, DType::f64, {0.5, 1.0}));
    write_bundle(dir_ / "seed-1.mbtb", b);
    set_.files = {dir_ / "seed-1.mbtb"};
    set_.meta = {{"seeds", {{{"seed", 1}, {"file", "seed-1.mbtb"}}}},
                 {"eager",
                  {{"max_abs_err", 1e-3},
                   {"max_rel_err", 1e-7},
                   {"policy_err", 1e-3},
                   {"widen_floor", 1.5e-3}}}};
    options_.problem = dir_ / "p.py";
    options_.backend = "opencl";
    options_.device = "cpu";
  }
  NativeRunResult produced(const std::vector<double>& values, double ms) {
    NativeRunResult r;
    r.outputs = {{tensor("output0", TensorRole::produced, DType::f32, values)}};
    r.timing = {{"median_ms", ms}, {"runs", 30}};
    r.device_name = "cpu";
    return r;
  }
  TempDir dir_;
  BundleSet set_;
  EvalOptions options_;
  ScriptedBackend backend_;
};

TEST_F(NativeEval, CorrectCandidateIsTimedAgainstEveryBaseline) {
  backend_.next = produced({0.5, 1.0}, 0.5);
  const auto r = evaluate_native(options_, dir_ / "c.cl", backend_, set_);
  EXPECT_TRUE(r["correct"].get<bool>()) << r["error"];
  EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), 4.0);  // torch_cpu 2 ms / 0.5 ms
  EXPECT_EQ(r["speedup_baseline"], "torch_cpu");
  EXPECT_DOUBLE_EQ(r["baselines"][1]["speedup"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(r["ref_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["cand_ms"].get<double>(), 0.5);
}

TEST_F(NativeEval, ToleranceIsWidenedToPyTorchsOwnErrorUnlessStrict) {
  backend_.next = produced({0.5 + 1e-3, 1.0}, 1.0);  // 1e-3 off: over 1e-4, under 1.5 x eager
  auto r = evaluate_native(options_, dir_ / "c.cl", backend_, set_);
  EXPECT_TRUE(r["correct"].get<bool>()) << r["error"];
  EXPECT_TRUE(r["tolerance"]["widened_by_eager"].get<bool>());
  options_.tolerance_policy = "strict";
  r = evaluate_native(options_, dir_ / "c.cl", backend_, set_);
  EXPECT_FALSE(r["correct"].get<bool>());
  EXPECT_EQ(r["error_kind"], "mismatch");
  EXPECT_TRUE(r["speedup"].is_null());  // wrong answers have no speedup
}

TEST_F(NativeEval, BuildErrorsAndCrashesPassThroughVerbatim) {
  NativeRunResult failed;
  failed.error_kind = "compile";
  failed.error = "<kernel>:3:5: error: use of undeclared identifier 'y'";
  backend_.next = failed;
  auto r = evaluate_native(options_, dir_ / "c.cl", backend_, set_);
  EXPECT_FALSE(r["correct"].get<bool>());
  EXPECT_EQ(r["error_kind"], "compile");
  EXPECT_EQ(r["error"], failed.error);
  failed.error_kind = "timeout";
  backend_.next = failed;
  EXPECT_EQ(evaluate_native(options_, dir_ / "c.cl", backend_, set_)["error_kind"], "timeout");
  EXPECT_EQ(backend_.signatures, 0) << "a run that failed has nothing to profile";
}

TEST_F(NativeEval, CostBasedBackendsReportCostsAndTheBackendsSignature) {
  backend_.base = {{"scalar_c_O2", 1000, "cost", ""}};
  NativeRunResult r = produced({0.5, 1.0}, 0);
  r.timing = {{"cost", 250.0}, {"instructions", 100.0}, {"vector_instructions", 60.0}};
  backend_.next = r;
  const auto result = evaluate_native(options_, dir_ / "c.c", backend_, set_);
  EXPECT_DOUBLE_EQ(result["speedup"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(result["cand_cost"].get<double>(), 250.0);
  EXPECT_TRUE(result["cand_ms"].is_null());
  EXPECT_EQ(backend_.signatures, 1);
  EXPECT_DOUBLE_EQ(result["signature"]["cost"].get<double>(), 250.0);
}

}  // namespace
}  // namespace mblast
