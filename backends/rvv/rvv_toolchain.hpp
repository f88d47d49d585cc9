#pragma once
// Cross-compiling RVV candidates: clang's RISC-V target with the Debian RISC-V GNU sysroot,
// statically linked with the embedded harness (runtime/harness.c), cached by content hash.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mblast::rvv {

struct Toolchain {
  std::filesystem::path clang;
  std::filesystem::path objcopy;
  std::filesystem::path qemu;
  std::filesystem::path sysroot;  // empty: clang's default
  std::string clang_version;      // first line of `clang --version`
};

// The toolchain on this machine, found once; nullopt with `why` filled when a part is missing.
std::optional<Toolchain> find_toolchain(std::string* why = nullptr);
// find_toolchain or an input_error that says what to install.
const Toolchain& require_toolchain();

// An embedded file of backends/rvv/runtime/ ("mblast_rvv.h", "harness.c").
std::string_view runtime_file(std::string_view name);

struct BuildRequest {
  std::string source;              // the candidate's C text
  std::vector<std::string> flags;  // optimization, -march=..., -D..., -mllvm ...
  std::filesystem::path cache_dir;
  std::chrono::seconds timeout{120};
};

struct Build {
  bool ok = false;
  bool cached = false;
  std::string key;
  std::string log;  // the failing step's output verbatim (compiler errors first)
  std::filesystem::path executable;
  double seconds = 0;
};

// Compiles, checks and links one candidate into <cache_dir>/<key>/candidate unless that build
// (or its failure) is cached. A compile or link error is a result with ok = false.
Build build_candidate(const BuildRequest& request);

// The QEMU plugin of the cost model's independent check (runtime/qemu_check_plugin.c), built
// for this host with the toolchain's clang into <cache_dir>/check-plugin-<key>.so once. Throws
// job_error with the compiler's log when it does not build.
std::filesystem::path build_check_plugin(const std::filesystem::path& cache_dir,
                                         std::chrono::seconds timeout);

}  // namespace mblast::rvv
