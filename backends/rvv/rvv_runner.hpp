#pragma once
// The RVV backend's runner: builds a candidate C file with the embedded harness
// (rvv_toolchain.hpp), runs it on each tensor bundle under qemu-riscv64 with a fixed VLEN, and
// prices the forward's dynamic instruction mix with the cost model (COST_MODEL.md).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "native/bundle.hpp"
#include "native/native_backend.hpp"

namespace mblast {

struct RvvOptions {
  int vlen = 256;                    // bits; QEMU's vlen and the cost model's register size
  int dlen = 128;                    // bits; the cost model's datapath width
  std::chrono::seconds timeout{60};  // per QEMU run and per compiler step
  std::filesystem::path cache_dir;   // builds go to <cache_dir>/rvv; empty: default_cache_dir()
  std::string opt_level = "-O2";
  std::string march = "rv64gcv";
  bool autovectorize = false;  // let clang vectorize for RVV at this VLEN (clang 14 needs a hint)
  std::vector<std::string> extra_flags;  // appended, e.g. -DMBLAST_LMUL=4
  int cost_bundles = 1;  // the first N bundles run traced and priced; the rest only run
  // The traced runs also load the check plugin (runtime/qemu_check_plugin.c): timing["check"]
  // holds its counts and its cycles under the independent timing model of COST_MODEL.md.
  bool cost_check = false;
  std::uint64_t max_trace_bytes = std::uint64_t{512} << 20;
  // A real RVV machine instead of QEMU (include/mblast/remote.hpp: "ssh:HOST", or "local" with a
  // prefix such as an emulator): the static executable and its input are pushed there and run,
  // and timing is wall clock ({"median_ms", ...} over `remote_repeats` calls of the forward on
  // the first bundle), not the cost model.
  std::string remote;
  std::vector<std::string> remote_prefix;  // run the executable through this on the target
  int remote_repeats = 30;
};

// The clang flags a build with `options` uses (also part of the build's cache key).
std::vector<std::string> rvv_compile_flags(const RvvOptions& options);

// Builds and runs the candidate on every bundle. Candidate failures come back in error_kind
// ("compile" with the compiler's log, "candidate_runtime", "timeout", "crash"); timing holds
// {"cost", "instructions", "vector_instructions", "vset_instructions", "vector_bytes",
// "scalar_load_bytes", "scalar_store_bytes", "vector_load_bytes", "vector_store_bytes",
// "strided_bytes", "blocks", "model", "vlen", "dlen", "per_bundle"} (and "check" with
// options.cost_check: the first traced bundle's plugin counts); details holds "flags"
// (["input_mutated"] when the forward wrote to an input), "compile_flags", "build_key",
// "cached_build". Throws mblast::Error when the toolchain is missing (input_error) or the job
// itself fails.
NativeRunResult run_rvv_candidate(const std::filesystem::path& candidate_c,
                                  const BundleSet& bundles, const RvvOptions& options);

// The plain C twin of a problem: <stem>.c beside <stem>.py. Throws input_error when absent.
std::filesystem::path rvv_baseline_source(const std::filesystem::path& problem);

// The same options for the scalar baseline (-O2 -march=rv64gc) and the autovectorized one
// (-O3 -march=rv64gcv with clang's RVV vectorizer enabled at options.vlen).
RvvOptions rvv_scalar_options(RvvOptions options);
RvvOptions rvv_autovec_options(RvvOptions options);

struct RvvBaselines {
  NativeRunResult scalar;   // "scalar_c_O2"
  NativeRunResult autovec;  // "autovec_c_O3"
};
RvvBaselines run_rvv_baselines(const std::filesystem::path& baseline_c, const BundleSet& bundles,
                               const RvvOptions& options);

}  // namespace mblast
