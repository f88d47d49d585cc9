#include "cuda/compile_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <system_error>

#include <spdlog/spdlog.h>

#include "mblast/files.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

fs::path worker_compile_cache(const fs::path& scratch) { return scratch / "compile-cache"; }
fs::path inductor_cache_dir(const fs::path& compile_cache) { return compile_cache / "inductor"; }
fs::path triton_cache_dir(const fs::path& compile_cache) { return compile_cache / "triton"; }

fs::path compile_cache_mount_point() {
  std::error_code ec;
  fs::path temp = fs::temp_directory_path(ec);
  if (ec) temp = "/tmp";
  return temp / ("mblast-compile-cache-" + std::to_string(::getuid()));
}

bool prepare_compile_cache_mount_point(const fs::path& mount_point) {
  std::error_code ec;
  fs::create_directories(mount_point, ec);
  struct stat info {};
  const bool ours = ::lstat(mount_point.c_str(), &info) == 0 && S_ISDIR(info.st_mode) &&
                    info.st_uid == ::getuid();
  if (!ours) {
    spdlog::warn("{} is not a folder of this user: workers' compile caches start empty",
                 mount_point.string());
  }
  return ours;
}

std::string candidate_text_key(const fs::path& candidate) {
  return sha256_hex(read_file(candidate).value_or(""));
}

fs::path problem_compile_cache(const fs::path& cache_dir, const fs::path& problem) {
  std::error_code ec;
  std::string key = fs::absolute(problem, ec).string();
  if (fs::is_regular_file(problem, ec)) key = read_file(problem).value_or(key);
  // "v2": entries made before workers saw their caches at one path name other workers' folders.
  return cache_dir / "compile" / "v2" / sha256_hex(key).substr(0, 16);
}

namespace {

std::uintmax_t bytes_below(const fs::path& folder) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

}  // namespace

std::uintmax_t copy_missing_files(const fs::path& from, const fs::path& to,
                                  std::uintmax_t max_bytes) {
  std::error_code ec;
  if (!fs::is_directory(from, ec)) return 0;
  std::uintmax_t size = bytes_below(to);
  std::uintmax_t copied = 0;
  for (fs::recursive_directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || it->is_symlink(file_ec)) continue;
    const fs::path target = to / fs::relative(it->path(), from, file_ec);
    if (file_ec || fs::exists(target, file_ec)) continue;
    const std::uintmax_t bytes = it->file_size(file_ec);
    if (file_ec || size + bytes > max_bytes) continue;
    if (copy_file_atomically(it->path(), target)) continue;  // an error: left out
    size += bytes;
    copied += bytes;
  }
  if (ec) spdlog::debug("compile cache: copying {} stopped: {}", from.string(), ec.message());
  return copied;
}

}  // namespace mblast
