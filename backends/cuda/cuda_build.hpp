#pragma once
// Building candidate CUDA with plain nvcc into shared objects that the Python worker loads with
// mblast_cuda.load (worker/mblast_cuda/) instead of load_inline (docs/ARCHITECTURE.md
// §4). This is mblast's one nvcc driver: the judge pre-builds every source it finds in a candidate
// (build_all), and the worker builds the others (assembled at run time) and finds the pre-built
// ones through `mblast internal cuda-build` (run_cuda_build_child).
#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace mblast {

// The CUDA sources of a candidate file: the content of every triple-quoted string literal
// (r"""...""", r'''...''', """...""", '''...''') that contains __global__, in file order, with
// line endings normalised to '\n' as Python does. Literals that Python would transform are left
// out and the worker compiles those itself: non-raw literals containing a backslash (escapes),
// f-strings and bytes. So are sources assembled at run time (concatenation, formatting).
std::vector<std::string> extract_cuda_sources(const std::string& python_text);

struct CudaBuildOptions {
  std::filesystem::path cache_dir;  // empty: default_cuda_cache_dir()
  // Where to build what cache_dir lacks when cache_dir is not writable (a sandboxed worker reads
  // the judge's cache but may not add to it); empty: cache_dir must be writable.
  std::filesystem::path fallback_dir;
  std::string arch = "sm_90";  // sm_XY or sm_XYa
  std::vector<std::string> extra_flags;
  std::filesystem::path nvcc;  // empty: find_nvcc()
  std::chrono::seconds timeout{180};
  unsigned jobs = 0;  // parallel nvcc runs in build_all; 0 = hardware_concurrency
};

struct CudaBuildResult {
  std::string key;                 // sha256 hex, as mblast_cuda.cache_key
  std::filesystem::path artifact;  // <cache_dir>/<key>.so (exists when ok)
  bool ok = false;
  bool cached = false;  // the artifact was already there; nvcc did not run
  std::string log;      // nvcc's output verbatim (the fix agent reads it)
  double seconds = 0;
};

// $MBLAST_CUDA_CACHE, else ~/.cache/mblast/cuda.
std::filesystem::path default_cuda_cache_dir();

// The nvcc flags for an architecture: -O3 -std=c++17 -shared -Xcompiler -fPIC
// -gencode arch=compute_XY,code=[sm_XY,compute_XY] -lineinfo -Xlinker -z,defs, then
// extra_flags.
// Throws input_error for an architecture that is not sm_XY.
std::vector<std::string> cuda_nvcc_flags(const std::string& arch,
                                         const std::vector<std::string>& extra_flags);

// The text nvcc compiles: the source plus the mblast_last_error / mblast_error_string helpers.
std::string cuda_final_source(const std::string& source);

// sha256(final source + '\0' + flags joined by ' ' + '\0' + arch), in hex.
std::string cuda_cache_key(const std::string& source, const std::string& arch,
                           const std::vector<std::string>& extra_flags);

// Compiles one source into <cache_dir>/<key>.so (written atomically, with <key>.cu and
// <key>.log beside it) unless the artifact exists. A compile error or timeout is a result with
// ok = false; throws mblast::Error only when nvcc cannot be found or run at all.
CudaBuildResult build_cuda_source(const std::string& source, const CudaBuildOptions& options);

// build_cuda_source for each source, up to options.jobs at a time; results in input order.
std::vector<CudaBuildResult> build_all(const std::vector<std::string>& sources,
                                       const CudaBuildOptions& options);

// $MBLAST_NVCC when set (and only then), else nvcc on PATH, else /usr/local/cuda/bin/nvcc.
std::optional<std::filesystem::path> find_nvcc();

// `mblast internal cuda-build`: build_cuda_source for the source read from `source` (arch: the
// given one, else detect_cuda_arch(); the cache: default_cuda_cache_dir(), where a source that is
// not built yet goes to $TMPDIR/mblast-cuda when the cache is read-only), reported as one JSON
// line {"key", "artifact", "ok", "cached", "log", "seconds"} on `out`. Returns 0 when built, 1
// when nvcc rejected the source; throws mblast::Error when nvcc cannot be found or run.
int run_cuda_build_child(std::istream& source, std::ostream& out, const std::string& arch,
                         const std::vector<std::string>& extra_flags);

// The first GPU's compute capability from nvidia-smi ("9.0" -> "sm_90"); else
// $MBLAST_CUDA_ARCH; else "sm_90".
std::string detect_cuda_arch();

}  // namespace mblast
