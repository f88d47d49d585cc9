#include "test_support.hpp"

#include <unistd.h>

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
  spec.timeout = std::chrono::seconds(120);
  return run_process(spec);
}

}  // namespace mblast::testing
