#include "mblast/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <fstream>
#include <random>
#include <sstream>

#include "mblast/error.hpp"

namespace mblast {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return std::nullopt;  // which an ifstream opens, reading nothing
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(text).str();
}

std::string read_input_file(const fs::path& path, std::string_view what) {
  std::optional<std::string> text = read_file(path);
  if (!text) {
    throw input_error("cannot read the " + std::string(what) + " " + path.string(),
                      "check that the file exists and is readable");
  }
  return *std::move(text);
}

fs::path temporary_sibling(const fs::path& path) {
  static std::atomic<unsigned long> count{0};
  static const unsigned salt = std::random_device{}();
  std::ostringstream suffix;
  suffix << ".tmp-" << ::getpid() << '-' << std::hex << salt << '-' << count.fetch_add(1);
  return path.string() + suffix.str();
}

namespace {

// Renames `staging` over `target`, or removes it when that fails.
std::error_code move_into_place(const fs::path& staging, const fs::path& target) {
  std::error_code ec;
  fs::rename(staging, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(staging, ignored);
  }
  return ec;
}

std::error_code last_error() { return {errno, std::generic_category()}; }

std::error_code write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return last_error();
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace

std::error_code write_file_atomically(const fs::path& path, std::string_view data) {
  const fs::path staging = temporary_sibling(path);
  const int fd = ::open(staging.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return last_error();
  std::error_code ec = write_all(fd, data);
  // Synced before the rename: after a crash the file holds the old bytes or the new, never none.
  if (!ec && ::fsync(fd) != 0) ec = last_error();
  if (::close(fd) != 0 && !ec) ec = last_error();
  if (ec) {
    std::error_code ignored;
    fs::remove(staging, ignored);
    return ec;
  }
  return move_into_place(staging, path);
}

std::error_code copy_file_atomically(const fs::path& source, const fs::path& target) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return ec;
  const fs::path staging = temporary_sibling(target);
  if (!fs::copy_file(source, staging, fs::copy_options::overwrite_existing, ec)) {
    std::error_code ignored;
    fs::remove(staging, ignored);
    return ec ? ec : std::make_error_code(std::errc::io_error);
  }
  return move_into_place(staging, target);
}

}  // namespace mblast
