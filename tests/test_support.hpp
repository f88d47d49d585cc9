#pragma once
// Helpers shared by the GoogleTest suites: scratch folders and running the real binary.
#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/support.hpp"
#include "native/bundle.hpp"

namespace mblast::testing {

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A tensor of `values` in `dtype` (float32 or float64; integer dtypes are truncated).
Tensor make_tensor(const std::string& name, TensorRole role, DType dtype,
                   std::vector<std::int64_t> shape, const std::vector<double>& values);

// A file under tests/ in the source tree.
std::string test_file(const std::string& relative);

// A CLI test's environment without an LLM: caches and configuration under `dir`, the machine's
// MBLAST_LLM and API keys unset.
std::map<std::string, std::optional<std::string>> no_llm_env(const std::filesystem::path& dir);

// The mblast binary under test ($MBLAST_BINARY, set by CTest).
std::string mblast_binary();

// Runs `mblast ARGS...` with a 120 s timeout.
ProcessResult run_mblast(const std::vector<std::string>& args,
                         const std::map<std::string, std::optional<std::string>>& env = {},
                         const std::string& stdin_data = {});

// Runs `call` and returns the mblast::Error it throws (a test failure if it throws none).
Error error_of(const std::function<void()>& call);

using mblast::seconds_since;

// True once `pid` no longer exists, or is a zombie left for a reaper that is not us (PID 1 in a
// container may never reap); waits up to 2 s.
bool process_gone(pid_t pid);

// True when this process has no child left, running or unreaped.
bool no_children_left();

// Sets (or, with nullopt, unsets) environment variables and restores them on destruction.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      set(name, value);
    }
  }
  ScopedEnv(const std::string& name, const std::optional<std::string>& value)
      : ScopedEnv(std::map<std::string, std::optional<std::string>>{{name, value}}) {}
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) set(it->first, it->second);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace mblast::testing
