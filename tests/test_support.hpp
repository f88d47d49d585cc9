#pragma once
// Helpers shared by the GoogleTest suites: scratch folders and running the real binary.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mblast/process.hpp"

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

// The mblast binary under test ($MBLAST_BINARY, set by CTest).
std::string mblast_binary();

// Runs `mblast ARGS...` with a 120 s timeout.
ProcessResult run_mblast(const std::vector<std::string>& args,
                         const std::map<std::string, std::optional<std::string>>& env = {},
                         const std::string& stdin_data = {});

}  // namespace mblast::testing
