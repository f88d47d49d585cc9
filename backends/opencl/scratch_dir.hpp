#pragma once
// A private temporary folder, removed with everything in it.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "mblast/error.hpp"

namespace mblast::opencl {

class ScratchDir {
 public:
  ScratchDir() {
    const auto base = std::filesystem::temp_directory_path();
    std::string pattern = (base / "mblast-opencl-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw job_error("cannot create a temporary folder in " + base.string(),
                      "set TMPDIR to a writable folder");
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace mblast::opencl
