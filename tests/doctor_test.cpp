#include "mblast/doctor.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::ScopedEnv;

std::filesystem::path temp_kb_path() {
  return std::filesystem::temp_directory_path() /
         ("mblast-doctor-test-" + std::to_string(::getpid())) / "kb.sqlite";
}

const DoctorCheck& find_check(const std::vector<DoctorCheck>& checks, const std::string& name) {
  for (const DoctorCheck& check : checks) {
    if (check.name == name) return check;
  }
  throw std::runtime_error("no check named " + name);
}

TEST(DoctorTest, ReportsEveryCheckAsJsonAndText) {
  DoctorOptions options;
  options.kb_path = temp_kb_path();
  const std::vector<DoctorCheck> checks = run_doctor(options);
  const nlohmann::json json = doctor_to_json(checks);

  ASSERT_TRUE(json.at("checks").is_array());
  std::vector<std::string> names;
  for (const nlohmann::json& check : json.at("checks")) {
    names.push_back(check.at("name").get<std::string>());
    EXPECT_TRUE(check.at("ok").is_boolean());
    EXPECT_TRUE(check.at("detail").is_string());
    EXPECT_FALSE(check.at("detail").get<std::string>().empty()) << names.back();
    EXPECT_EQ(check.at("fix").get<std::string>().empty(), check.at("ok").get<bool>())
        << names.back();
  }
  EXPECT_EQ(names, doctor_check_names());
  // What every backend needs (PyTorch computes the references), then each backend's own checks
  // in the registry's order, then the LLM and the KB.
  EXPECT_EQ(names, (std::vector<std::string>{"python3-torch", "nvcc", "nvidia-gpu", "opencl",
                                             "rvv-toolchain", "qemu-rvv", "llm", "kb"}));
  EXPECT_TRUE(json.at("ok").is_boolean());

  const std::string text = doctor_to_text(checks);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<long>(checks.size()));
  EXPECT_FALSE(std::filesystem::exists(options.kb_path.parent_path()))
      << "the kb check must not leave directories behind";
}

TEST(DoctorTest, NeverPrintsAnApiKey) {
  const ScopedEnv key("OPENAI_API_KEY", "sk-test-SECRET123");
  const ScopedEnv llm("MBLAST_LLM", std::nullopt);
  DoctorOptions options;
  options.kb_path = temp_kb_path();
  const std::vector<DoctorCheck> checks = run_doctor(options);
  const std::string json = doctor_to_json(checks).dump();
  const std::string text = doctor_to_text(checks);
  for (const std::string& output : {json, text}) {
    EXPECT_EQ(output.find("SECRET123"), std::string::npos) << output;
    EXPECT_EQ(output.find("sk-test"), std::string::npos) << output;
  }
  const DoctorCheck& check = find_check(checks, "llm");
  EXPECT_TRUE(check.ok);
  EXPECT_EQ(check.detail, "openai:gpt-4o (from the config file or an API key in the environment)");
}

TEST(DoctorTest, ShowsOnlyProviderAndModelOfMblastLlm) {
  const ScopedEnv llm("MBLAST_LLM", "command:my-llm --api-key sk-test-SECRET456");
  DoctorOptions options;
  options.only = {"llm"};
  const std::vector<DoctorCheck> checks = run_doctor(options);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_TRUE(checks[0].ok);
  EXPECT_EQ(checks[0].detail, "command:my-llm (from MBLAST_LLM)");
}

TEST(DoctorTest, LlmCheckFailsWithoutConfiguration) {
  const ScopedEnv llm("MBLAST_LLM", std::nullopt);
  const ScopedEnv openai("OPENAI_API_KEY", std::nullopt);
  const ScopedEnv anthropic("ANTHROPIC_API_KEY", std::nullopt);
  DoctorOptions options;
  options.only = {"llm"};
  const std::vector<DoctorCheck> checks = run_doctor(options);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].ok);
  EXPECT_EQ(checks[0].detail, "no LLM configured: optimize runs built-in techniques only");
  EXPECT_FALSE(checks[0].fix.empty());
}

TEST(DoctorTest, KbCheckFailsForAnUnwritablePath) {
  DoctorOptions options;
  options.kb_path = "/proc/mblast/kb.sqlite";
  options.only = {"kb"};
  const std::vector<DoctorCheck> checks = run_doctor(options);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].ok) << checks[0].detail;
  EXPECT_NE(checks[0].detail.find("/proc/mblast"), std::string::npos);
  EXPECT_FALSE(checks[0].fix.empty());
  EXPECT_FALSE(doctor_to_json(checks).at("ok").get<bool>());
}

DoctorCheck run_single_check(const std::string& name) {
  DoctorOptions options;
  options.only = {name};
  const std::vector<DoctorCheck> checks = run_doctor(options);
  if (checks.size() != 1) throw std::runtime_error("expected one check");
  return checks[0];
}

bool has_opencl_icd() {
  std::error_code ec;
  return std::filesystem::is_directory("/etc/OpenCL/vendors", ec) &&
         !std::filesystem::is_empty("/etc/OpenCL/vendors", ec);
}

TEST(DoctorTest, OpenClWorksHere) {
  if (!has_opencl_icd()) GTEST_SKIP() << "no OpenCL ICD in /etc/OpenCL/vendors";
  const DoctorCheck check = run_single_check("opencl");
  EXPECT_TRUE(check.ok) << check.detail;
  EXPECT_NE(check.detail.find("device"), std::string::npos) << check.detail;
}

TEST(DoctorTest, RvvToolchainWorksHere) {
  if (!find_program("clang")) GTEST_SKIP() << "clang is not on PATH";
  const DoctorCheck check = run_single_check("rvv-toolchain");
  EXPECT_TRUE(check.ok) << check.detail;
  EXPECT_NE(check.detail.find("intrinsics"), std::string::npos) << check.detail;
}

TEST(DoctorTest, QemuRunsTheRvvProbeHere) {
  if (!find_program("clang")) GTEST_SKIP() << "clang is not on PATH";
  if (!find_program("qemu-riscv64")) GTEST_SKIP() << "qemu-riscv64 is not on PATH";
  const DoctorCheck check = run_single_check("qemu-rvv");
  EXPECT_TRUE(check.ok) << check.detail;
  EXPECT_TRUE(check.required_for_cpu_backends);
}

TEST(DoctorTest, RejectsUnknownCheckNames) {
  DoctorOptions options;
  options.only = {"flux-capacitor"};
  EXPECT_THROW(run_doctor(options), Error);
}

TEST(DoctorTest, FormatsAlignedTextAndOverallStatus) {
  const std::vector<DoctorCheck> checks = {
      {"nvcc", true, "CUDA 13.0 (/usr/local/cuda/bin/nvcc)", "", false},
      {"nvidia-gpu", false, "no NVIDIA GPU found", "install a driver", false},
  };
  EXPECT_EQ(doctor_to_text(checks),
            "ok       nvcc            CUDA 13.0 (/usr/local/cuda/bin/nvcc)\n"
            "missing  nvidia-gpu      no NVIDIA GPU found -> fix: install a driver\n");
  EXPECT_TRUE(doctor_to_json(checks).at("ok").get<bool>());  // neither check is required

  const std::vector<DoctorCheck> broken = {{"kb", false, "cannot write", "fix it", true}};
  EXPECT_FALSE(doctor_to_json(broken).at("ok").get<bool>());
}

}  // namespace
}  // namespace mblast
