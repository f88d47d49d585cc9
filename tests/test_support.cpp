#include "test_support.hpp"

#include <cstring>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <thread>

#include <random>
#include <stdexcept>

namespace mblast::testing {

TempDir::TempDir() {
  std::random_device entropy;
  path_ = std::filesystem::temp_directory_path() /
          ("mblast-test-" + std::to_string(::getpid()) + "-" + std::to_string(entropy()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string test_file(const std::string& relative) {
  return std::string(MBLAST_SOURCE_DIR) + "/tests/" + relative;
}

std::map<std::string, std::optional<std::string>> no_llm_env(const std::filesystem::path& dir) {
  return {{"XDG_CACHE_HOME", (dir / "xdg-cache").string()},
          {"XDG_CONFIG_HOME", (dir / "xdg-config").string()},
          {"MBLAST_LLM", std::nullopt},
          {"OPENAI_API_KEY", std::nullopt},
          {"ANTHROPIC_API_KEY", std::nullopt}};
}

std::string mblast_binary() {
  const char* binary = std::getenv("MBLAST_BINARY");
  if (!binary || !*binary) {
    throw std::runtime_error("MBLAST_BINARY is not set; run the tests through ctest");
  }
  return binary;
}

ProcessResult run_mblast(const std::vector<std::string>& args,
                         const std::map<std::string, std::optional<std::string>>& env,
                         const std::string& stdin_data) {
  ProcessSpec spec;
  spec.argv = {mblast_binary()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = env;
  spec.stdin_data = stdin_data;
  // A whole optimize run on the CPU (the demo's three steps) takes about 110 s alone and twice
  // that with both cores of a CI machine busy; ctest stops a test at 600 s.
  spec.timeout = std::chrono::seconds(480);
  return run_process(spec);
}

Error error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no mblast::Error thrown";
  return job_error("none");
}

bool process_gone(pid_t pid) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

Tensor make_tensor(const std::string& name, TensorRole role, DType dtype,
                   std::vector<std::int64_t> shape, const std::vector<double>& values) {
  Tensor t;
  t.name = name;
  t.role = role;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::byte* at = t.data.data() + i * dtype_size(dtype);
    if (dtype == DType::f64) {
      std::memcpy(at, &values[i], sizeof(double));
    } else if (dtype == DType::f32) {
      const float f = static_cast<float>(values[i]);
      std::memcpy(at, &f, sizeof f);
    } else if (dtype == DType::i32) {
      const auto v = static_cast<std::int32_t>(values[i]);
      std::memcpy(at, &v, sizeof v);
    } else if (dtype == DType::i64) {
      const auto v = static_cast<std::int64_t>(values[i]);
      std::memcpy(at, &v, sizeof v);
    } else {
      *at = static_cast<std::byte>(values[i] != 0);
    }
  }
  return t;
}

}  // namespace mblast::testing
