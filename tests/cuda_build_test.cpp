#include "cuda/cuda_build.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::ScopedEnv;

using testing::TempDir;

const char* const kRelu = R"(
extern "C" __global__ void relu_kernel(const float* x, float* y, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
extern "C" void relu(const float* x, float* y, long n, cudaStream_t stream) {
  relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
}
)";

void write_script(const std::filesystem::path& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
}

CudaBuildOptions options_in(const TempDir& dir) {
  CudaBuildOptions options;
  options.cache_dir = dir / "cache";
  return options;
}

TEST(CudaExtractTest, FindsTripleQuotedKernelSources) {
  const std::string text =
      "import torch\n"
      "DOC = \"\"\"no kernels here\"\"\"\n"
      "A = r\"\"\"__global__ void a() { printf(\"%d\\n\", 1); }\"\"\"\n"
      "B = '''__global__ void b() {}'''\n"
      "C = R'''__global__ void c() {}\n'''\n"
      "D = \"\"\"__global__ void d() { char c = '\\n'; }\"\"\"\n"
      "E = f\"\"\"__global__ void e() {{}}\"\"\"\n"
      "F = b'''__global__ void f() {}'''\n"
      "G = \"x\"  # \"\"\"__global__ void g() {}\"\"\"\n"
      "H = '\"\"\"'; I = \"__global__\"\n";
  const std::vector<std::string> sources = extract_cuda_sources(text);
  ASSERT_EQ(sources.size(), 3U);
  EXPECT_EQ(sources[0], "__global__ void a() { printf(\"%d\\n\", 1); }");
  EXPECT_EQ(sources[1], "__global__ void b() {}");
  EXPECT_EQ(sources[2], "__global__ void c() {}\n");
}

TEST(CudaExtractTest, NormalisesLineEndingsAndKeepsEscapedQuotesInRawStrings) {
  const std::string text =
      "S = r\"\"\"\r\n__global__ void k() {}\r\n// \\\"\"\" still inside\r\n\"\"\"\r\n";
  const std::vector<std::string> sources = extract_cuda_sources(text);
  ASSERT_EQ(sources.size(), 1U);
  EXPECT_EQ(sources[0], "\n__global__ void k() {}\n// \\\"\"\" still inside\n");
  EXPECT_TRUE(extract_cuda_sources("x = r'''__global__ unterminated").empty());
}

TEST(CudaBuildTest, FlagsAndArchitectures) {
  EXPECT_EQ(cuda_nvcc_flags("sm_90", {"-DX=1"}),
            (std::vector<std::string>{"-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
                                      "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
                                      "-lineinfo", "-Xlinker", "-z,defs", "-DX=1"}));
  EXPECT_EQ(cuda_nvcc_flags("sm_90a", {})[6], "arch=compute_90a,code=[sm_90a,compute_90a]");
  EXPECT_THROW(cuda_nvcc_flags("90", {}), Error);
  EXPECT_THROW(cuda_nvcc_flags("sm_", {}), Error);
  EXPECT_NE(cuda_cache_key(kRelu, "sm_90", {}), cuda_cache_key(kRelu, "sm_80", {}));
  EXPECT_NE(cuda_cache_key(kRelu, "sm_90", {}), cuda_cache_key(kRelu, "sm_90", {"-DX"}));
  EXPECT_EQ(cuda_final_source("x").rfind("x\n", 0), 0U);
  EXPECT_NE(cuda_final_source("x").find("mblast_last_error"), std::string::npos);
}

TEST(CudaBuildTest, KeyAgreesWithPythonWorker) {
  const std::string python = "/usr/bin/python3";
  if (!find_program(python)) GTEST_SKIP() << python << " not found";
  const std::string source = std::string(kRelu) + "// ünïcode comment\r\n";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"sm_90", {}}, {"sm_80", {"-DBLOCK=128", "--use_fast_math"}}, {"sm_90a", {"-G"}}};
  for (const auto& [arch, extra] : cases) {
    ProcessSpec spec;
    spec.argv = {python, "-m", "mblast_cuda", "key", "--arch", arch};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.env["PYTHONPATH"] = std::string(MBLAST_SOURCE_DIR) + "/backends/cuda/worker";
    spec.stdin_data = source;
    spec.timeout = std::chrono::seconds(60);
    const ProcessResult run = run_process(spec);
    ASSERT_TRUE(run.ok()) << run.describe() << "\n" << run.err;
    EXPECT_EQ(run.out, cuda_cache_key(source, arch, extra) + "\n") << arch;
  }
}

TEST(CudaBuildTest, BuildsSharedObjectAndThenUsesTheCache) {
  if (!find_nvcc()) GTEST_SKIP() << "nvcc not found";
  const TempDir dir;
  const CudaBuildOptions options = options_in(dir);
  const CudaBuildResult first = build_cuda_source(kRelu, options);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(first.key, cuda_cache_key(kRelu, "sm_90", {}));
  EXPECT_EQ(first.artifact, options.cache_dir / (first.key + ".so"));
  EXPECT_TRUE(std::filesystem::is_regular_file(first.artifact));
  EXPECT_TRUE(std::filesystem::is_regular_file(options.cache_dir / (first.key + ".cu")));
  EXPECT_TRUE(std::filesystem::is_regular_file(options.cache_dir / (first.key + ".log")));
  EXPECT_GT(first.seconds, 0.0);

  const CudaBuildResult second = build_cuda_source(kRelu, options);
  EXPECT_TRUE(second.ok);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.key, first.key);
  // Only the final artifacts remain: no temporary files left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(options.cache_dir)) {
    ++entries;
  }
  EXPECT_EQ(entries, 3U);
}

TEST(CudaBuildTest, SyntaxErrorKeepsNvccMessage) {
  if (!find_nvcc()) GTEST_SKIP() << "nvcc not found";
  const TempDir dir;
  const std::string broken =
      "__global__ void k(float* x) {\n  x[0] = 1.0f\n  undefined_name();\n}\n";
  const CudaBuildResult result = build_cuda_source(broken, options_in(dir));
  EXPECT_FALSE(result.ok);
  EXPECT_FALSE(result.cached);
  EXPECT_FALSE(std::filesystem::exists(result.artifact));
  EXPECT_NE(result.log.find(result.key + ".cu(3): error"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("undefined_name"), std::string::npos) << result.log;
}

TEST(CudaBuildTest, UndefinedSymbolFailsTheBuild) {
  if (!find_nvcc()) GTEST_SKIP() << "nvcc not found";
  const TempDir dir;
  const std::string source =
      "extern \"C\" void missing(float* x);\n"
      "extern \"C\" void caller(float* x) { missing(x); }\n";
  const CudaBuildResult result = build_cuda_source(source, options_in(dir));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("undefined reference to `missing'"), std::string::npos) << result.log;
}

TEST(CudaBuildTest, BuildsSeveralSourcesInParallelInInputOrder) {
  if (!find_nvcc()) GTEST_SKIP() << "nvcc not found";
  const TempDir dir;
  CudaBuildOptions options = options_in(dir);
  options.jobs = 2;
  const std::string other = "extern \"C\" __global__ void zero(float* x) { x[threadIdx.x] = 0; }\n";
  const std::vector<std::string> sources = {kRelu, other, kRelu};
  const std::vector<CudaBuildResult> results = build_all(sources, options);
  ASSERT_EQ(results.size(), 3U);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << results[i].log;
    EXPECT_EQ(results[i].key, cuda_cache_key(sources[i], options.arch, {}));
  }
  EXPECT_NE(results[0].key, results[1].key);
  EXPECT_TRUE(build_all({other}, options).at(0).cached);
}

TEST(CudaBuildTest, TimeoutIsAFailedBuild) {
  const TempDir dir;
  CudaBuildOptions options = options_in(dir);
  options.nvcc = dir / "slow-nvcc";
  options.timeout = std::chrono::seconds(1);
  write_script(options.nvcc, "echo starting; sleep 30");
  const CudaBuildResult result = build_cuda_source(kRelu, options);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("starting"), std::string::npos);
  EXPECT_NE(result.log.find("timed out"), std::string::npos) << result.log;
  EXPECT_LT(result.seconds, 20.0);
}

TEST(CudaBuildTest, MissingNvccIsAnErrorWithAHint) {
  const ScopedEnv nvcc("MBLAST_NVCC", "/nonexistent/nvcc");
  EXPECT_FALSE(find_nvcc().has_value());
  const TempDir dir;
  try {
    build_cuda_source(kRelu, options_in(dir));
    FAIL() << "expected mblast::Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("nvcc"), std::string::npos);
    EXPECT_NE(error.hint().find("MBLAST_NVCC"), std::string::npos);
  }
}

TEST(CudaBuildTest, DetectsArchitectureFromNvidiaSmiThenEnvironment) {
  const TempDir dir;
  write_script(dir / "nvidia-smi", "echo 8.6; echo 9.0");
  {
    const ScopedEnv path("PATH", dir.path().string() + ":/usr/bin:/bin");
    EXPECT_EQ(detect_cuda_arch(), "sm_86");
  }
  const ScopedEnv path("PATH", (dir / "empty").string());
  {
    const ScopedEnv arch("MBLAST_CUDA_ARCH", "sm_80");
    EXPECT_EQ(detect_cuda_arch(), "sm_80");
  }
  const ScopedEnv arch("MBLAST_CUDA_ARCH", std::nullopt);
  EXPECT_EQ(detect_cuda_arch(), "sm_90");
}

}  // namespace
}  // namespace mblast
