#include "cuda/cuda_build.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/support.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::ScopedEnv;

using testing::run_mblast;
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

TEST(CudaBuildTest, KeyIsSha256OfTextFlagsAndArch) {
  std::string flags;
  for (const auto& flag : cuda_nvcc_flags("sm_80", {"-DX=1"}))
    flags += (flags.empty() ? "" : " ") + flag;
  const std::string material = cuda_final_source(kRelu) + '\0' + flags + '\0' + "sm_80";
  EXPECT_EQ(cuda_cache_key(kRelu, "sm_80", {"-DX=1"}), sha256_hex(material));
}

// What the worker's mblast_cuda.load() runs, through the real binary, with an nvcc stand-in that
// writes the shared object it is asked for (or fails as nvcc does).
TEST(CudaBuildTest, TheWorkersBuildCommandReportsTheBuildAsJson) {
  const TempDir dir;
  const auto nvcc = dir / "nvcc";
  write_script(nvcc, "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo so > \"$2\"; shift; done");
  const std::map<std::string, std::optional<std::string>> env = {
      {"MBLAST_NVCC", nvcc.string()}, {"MBLAST_CUDA_CACHE", (dir / "cache").string()}};
  const std::vector<std::string> args = {"internal", "cuda-build", "--arch=sm_80",
                                         "--flag=-DBLOCK=128", "--flag=--use_fast_math"};
  const ProcessResult first = run_mblast(args, env, kRelu);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto report = nlohmann::json::parse(first.out);
  const std::string key = cuda_cache_key(kRelu, "sm_80", {"-DBLOCK=128", "--use_fast_math"});
  EXPECT_EQ(report.at("key"), key);
  EXPECT_EQ(report.at("artifact"), (dir / "cache" / (key + ".so")).string());
  EXPECT_TRUE(report.at("ok"));
  EXPECT_FALSE(report.at("cached"));
  EXPECT_TRUE(nlohmann::json::parse(run_mblast(args, env, kRelu).out).at("cached"));

  write_script(nvcc, "echo 'kernel.cu(3): error: expected a \";\"'; exit 2");
  const ProcessResult broken = run_mblast(args, env, std::string(kRelu) + "// changed\n");
  EXPECT_EQ(broken.exit_code, 1);
  const auto failed = nlohmann::json::parse(broken.out);
  EXPECT_FALSE(failed.at("ok"));
  EXPECT_NE(failed.at("log").get<std::string>().find("error: expected"), std::string::npos);
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

// A worker's build: the judge's cache is read where it can be, and what it lacks is built in the
// worker's own folder when the cache cannot be written (a path under a file here: root, who runs
// CI, may write anywhere else).
TEST(CudaBuildTest, WhatAnUnwritableCacheLacksIsBuiltInTheFallbackFolder) {
  if (!find_nvcc()) GTEST_SKIP() << "nvcc not found";
  const TempDir dir;
  CudaBuildOptions options = options_in(dir);
  std::ofstream(dir.path() / "a-file") << "not a folder";
  options.cache_dir = dir.path() / "a-file" / "cache";
  options.fallback_dir = dir.path() / "fallback";
  const CudaBuildResult built = build_cuda_source(kRelu, options);
  ASSERT_TRUE(built.ok) << built.log;
  EXPECT_EQ(built.artifact, options.fallback_dir / (built.key + ".so"));
  EXPECT_EQ(built.key, cuda_cache_key(kRelu, "sm_90", {}));
  EXPECT_TRUE(build_cuda_source(kRelu, options).cached);
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
