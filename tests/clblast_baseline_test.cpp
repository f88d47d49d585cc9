// The OpenCL backend's tuned-library baseline: CLBlast computes GEMM-shaped problems on the
// candidates' device, from the record the bundle writer leaves in meta.json, verified against the
// float64 references like a candidate; the headline on a CPU device is the faster of it and
// PyTorch on that CPU.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "mblast/eval_options.hpp"
#include "mblast/python.hpp"
#include "native/bundle.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_native_backend.hpp"
#include "test_support.hpp"

namespace mblast::opencl {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = MBLAST_SOURCE_DIR;

NativeBaseline ms(const std::string& name, double value) { return {name, value, "ms", ""}; }

std::vector<std::string> names(const std::vector<NativeBaseline>& baselines) {
  std::vector<std::string> out;
  for (const auto& b : baselines) out.push_back(b.name);
  return out;
}

TEST(OpenClBaselineOrder, TheFasterOfPyTorchAndTheLibraryLeadsOnACpuThenTheNaiveKernel) {
  using V = std::vector<std::string>;
  EXPECT_EQ(names(order_opencl_baselines(ms("torch_cpu", 2), ms("clblast", 1),
                                         ms("naive_opencl", 3), true)),
            (V{"clblast", "torch_cpu", "naive_opencl"}));
  EXPECT_EQ(names(order_opencl_baselines(ms("torch_cpu", 1), ms("clblast", 2),
                                         ms("naive_opencl", 0.5), true)),
            (V{"torch_cpu", "clblast", "naive_opencl"}));
  // Not a GEMM: as before, PyTorch leads and the naive kernel follows.
  EXPECT_EQ(
      names(order_opencl_baselines(ms("torch_cpu", 1), std::nullopt, ms("naive_opencl", 3), true)),
      (V{"torch_cpu", "naive_opencl"}));
  // Another device: the library, then the naive kernel; the host's PyTorch last.
  EXPECT_EQ(names(order_opencl_baselines(ms("torch_cpu", 1), ms("clblast", 2),
                                         ms("naive_opencl", 3), false)),
            (V{"clblast", "naive_opencl", "torch_cpu"}));
  EXPECT_EQ(
      names(order_opencl_baselines(ms("torch_cpu", 1), std::nullopt, ms("naive_opencl", 3), false)),
      (V{"naive_opencl", "torch_cpu"}));
}

class ClblastBaseline : public ::testing::Test {
 protected:
  void SetUp() override {
    if (list_devices().empty()) GTEST_SKIP() << "no OpenCL platform with a device";
    if (!python()) GTEST_SKIP() << "no Python with torch to make the bundles";
  }

  static const std::optional<fs::path>& python() {
    static const std::optional<fs::path> found = find_torch_python();
    return found;
  }

  // Bundles made once per problem for the whole suite (the cache is keyed by content).
  static BundleSet bundles(const fs::path& problem) {
    static const testing::TempDir cache;
    return make_bundles(problem, 2, 1, cache.path(), *python(), 5);
  }

  struct Measured {
    std::vector<NativeBaseline> baselines;
    std::vector<std::string> missing;
  };

  static Measured measure(const fs::path& problem, const BundleSet& set) {
    EvalOptions options;
    options.backend = "opencl";
    options.device = "";  // the first CPU device
    options.timing_runs = 5;
    auto backend = make_opencl_backend(options);
    Measured m;
    m.baselines = backend->baselines(problem, set);
    m.missing = backend->missing_baselines();
    return m;
  }

  static const NativeBaseline* named(const Measured& m, const std::string& name) {
    for (const auto& b : m.baselines) {
      if (b.name == name) return &b;
    }
    return nullptr;
  }

  static std::string missing_line(const Measured& m, const std::string& prefix) {
    for (const auto& line : m.missing) {
      if (line.starts_with(prefix)) return line;
    }
    return {};
  }
};

TEST_F(ClblastBaseline, MatmulGetsAVerifiedTimedLibraryBaselineAndTheFasterLeads) {
  const fs::path problem = kRoot / "benchmarks/problems/native/matmul.py";
  const Measured m = measure(problem, bundles(problem));
  const NativeBaseline* library = named(m, "clblast");
  ASSERT_NE(library, nullptr) << missing_line(m, "clblast");
  EXPECT_GT(library->value, 0.0);
  EXPECT_EQ(library->unit, "ms");
  EXPECT_NE(library->detail.find("CLBlast 1.5.3 Sgemm M=64 N=64 K=64 A=input0 B=input1"),
            std::string::npos)
      << library->detail;
  EXPECT_NE(library->detail.find("compute units"), std::string::npos) << library->detail;
  EXPECT_TRUE(library->signature.empty()) << "the loop starts from the naive kernel's profile";
  EXPECT_EQ(missing_line(m, "clblast"), "");

  const NativeBaseline* torch = named(m, "torch_cpu");
  ASSERT_NE(torch, nullptr);
  ASSERT_EQ(m.baselines.size(), 3u);
  EXPECT_EQ(m.baselines[0].name, library->value < torch->value ? "clblast" : "torch_cpu");
  EXPECT_EQ(m.baselines[2].name, "naive_opencl");
}

TEST_F(ClblastBaseline, BatchedAndTransposedProductsMapOntoTheLibraryCorrectly) {
  // Verification against the references is what shows the mapping is right.
  const fs::path batched = kRoot / "tests/problems/bmm_transposed.py";
  Measured m = measure(batched, bundles(batched));
  const NativeBaseline* library = named(m, "clblast");
  ASSERT_NE(library, nullptr) << missing_line(m, "clblast");
  EXPECT_NE(library->detail.find("SgemmStridedBatched batch=3 M=17 N=20 K=12 A=input0 B=input1^T"),
            std::string::npos)
      << library->detail;

  const fs::path linear = kRoot / "tests/problems/linear_no_bias.py";
  m = measure(linear, bundles(linear));
  library = named(m, "clblast");
  ASSERT_NE(library, nullptr) << missing_line(m, "clblast");
  EXPECT_NE(library->detail.find("Sgemm M=18 N=10 K=24 A=input0 B=fc.weight^T"), std::string::npos)
      << library->detail;
}

TEST_F(ClblastBaseline, AProblemThatIsNoGemmGetsNoLibraryBaselineAndSaysWhy) {
  const fs::path problem = kRoot / "tests/problems/softmax_small.py";
  const Measured m = measure(problem, bundles(problem));
  EXPECT_EQ(named(m, "clblast"), nullptr);
  ASSERT_FALSE(m.baselines.empty());
  EXPECT_EQ(m.baselines[0].name, "torch_cpu");
  EXPECT_NE(missing_line(m, "clblast").find("not a GEMM: the forward computes with _softmax"),
            std::string::npos)
      << missing_line(m, "clblast");
}

TEST_F(ClblastBaseline, ARecordPointingAtWrongTensorsIsRejectedNotUsed) {
  const fs::path problem = kRoot / "benchmarks/problems/native/matmul.py";
  const BundleSet good = bundles(problem);
  const auto measure_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    BundleSet set = good;
    edit(set.meta["gemm"]);
    const Measured m = measure(problem, set);
    EXPECT_EQ(named(m, "clblast"), nullptr) << set.meta["gemm"].dump();
    return missing_line(m, "clblast");
  };
  // B @ A runs and is wrong: verification catches it.
  std::string line = measure_with([](nlohmann::json& g) { std::swap(g["a"], g["b"]); });
  EXPECT_NE(line.find("failed: "), std::string::npos) << line;
  EXPECT_NE(line.find("A=input1 B=input0"), std::string::npos) << line;
  // A^T @ B, likewise.
  line = measure_with([](nlohmann::json& g) { g["a"]["transposed"] = true; });
  EXPECT_NE(line.find("failed: "), std::string::npos) << line;
  // A tensor the bundle does not hold, and a leading dimension past the end of the buffer, are
  // refused before the library reads anything.
  line = measure_with([](nlohmann::json& g) { g["b"]["tensor"] = "weight"; });
  EXPECT_NE(line.find("which the bundle does not hold"), std::string::npos) << line;
  line = measure_with([](nlohmann::json& g) { g["a"]["ld"] = 128; });
  EXPECT_NE(line.find("reads 8128 elements of input0"), std::string::npos) << line;
  line = measure_with([](nlohmann::json& g) { g.erase("k"); });
  EXPECT_NE(line.find("malformed: k is missing"), std::string::npos) << line;
}

TEST_F(ClblastBaseline, EvalJsonListsTheLibraryWithTheCandidatesSpeedupOverIt) {
  const testing::TempDir dir;
  const auto result = testing::run_mblast(
      {"eval", (kRoot / "benchmarks/problems/native/matmul.py").string(), "--backend", "opencl",
       "--candidate", (kRoot / "benchmarks/examples/native/matmul.opt.cl").string(), "--seeds", "2",
       "--runs", "5", "--cache-dir", (dir / "cache").string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto r = nlohmann::json::parse(result.out);
  ASSERT_TRUE(r["correct"].get<bool>()) << r.dump(2);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : r["baselines"]) rows[row["name"].get<std::string>()] = row;
  ASSERT_TRUE(rows.contains("clblast")) << r.dump(2);
  ASSERT_TRUE(rows.contains("torch_cpu"));
  EXPECT_GT(rows["clblast"]["speedup"].get<double>(), 0.0);
  const bool library_leads =
      rows["clblast"]["value"].get<double>() < rows["torch_cpu"]["value"].get<double>();
  EXPECT_EQ(r["speedup_baseline"], library_leads ? "clblast" : "torch_cpu");
  EXPECT_EQ(r["speedup"], r["baselines"][0]["speedup"]);
}

}  // namespace
}  // namespace mblast::opencl
