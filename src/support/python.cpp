#include "mblast/python.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "mblast/embedded.hpp"
#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "mblast/kb.hpp"
#include "mblast/process.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {
std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}
}  // namespace

std::vector<std::string> python_candidates() {
  std::vector<std::string> candidates;
  if (auto configured = env_or_empty("MBLAST_PYTHON"); !configured.empty()) {
    candidates.push_back(configured);
  }
  if (auto python3 = find_program("python3")) candidates.push_back(python3->string());
  if (std::find(candidates.begin(), candidates.end(), "/usr/bin/python3") == candidates.end()) {
    candidates.push_back("/usr/bin/python3");
  }
  return candidates;
}

std::optional<fs::path> find_torch_python(std::string* tried) {
  for (const auto& python : python_candidates()) {
    ProcessSpec spec;
    spec.argv = {python, "-c",
                 "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"};
    spec.timeout = std::chrono::seconds(20);
    try {
      if (run_process(spec).ok()) return fs::path(python);
    } catch (const Error&) {
    }
    if (tried) *tried += (tried->empty() ? "" : ", ") + python;
  }
  return std::nullopt;
}

fs::path require_torch_python() {
  std::string tried;
  auto python = find_torch_python(&tried);
  if (!python) {
    throw input_error("no Python with PyTorch found (tried " + tried + ")",
                      "apt-get install python3-torch, or set MBLAST_PYTHON");
  }
  return *python;
}

namespace {

// The embedded worker's files never change while the process runs: their hash is taken once.
const std::string& embedded_worker_hash() {
  static const std::string hash = [] {
    std::string all;
    for (const auto& file : embedded::worker::files()) {
      all.append(file.path).push_back('\0');
      all.append(file.contents).push_back('\0');
    }
    return sha256_hex(all).substr(0, 16);
  }();
  return hash;
}

}  // namespace

fs::path worker_directory() {
  if (auto configured = env_or_empty("MBLAST_WORKER_DIR"); !configured.empty()) return configured;
  const auto& files = embedded::worker::files();
  const fs::path cache = default_cache_dir();
  const fs::path target = cache / ("worker-" + embedded_worker_hash());
  // Threads of one process share the staging folder's name (call 75: the loop's built-in check
  // and the reference's generation raced on a fresh machine and one got a half-written worker).
  static std::mutex writing;
  const std::lock_guard lock(writing);
  if (fs::exists(target / ".complete")) return target;

  // Written to a private folder first and renamed, so concurrent mblast processes never see a
  // half-written worker.
  const fs::path staging = target.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  for (const auto& file : files) {
    const fs::path path = staging / std::string(file.path);
    fs::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary);
    out.write(file.contents.data(), static_cast<std::streamsize>(file.contents.size()));
    if (!out) {
      throw input_error("cannot write the Python worker to " + staging.string(),
                        "make " + cache.string() + " writable, or set XDG_CACHE_HOME");
    }
  }
  std::ofstream(staging / ".complete") << "ok\n";
  fs::rename(staging, target, ec);
  if (ec) {
    fs::remove_all(staging, ec);  // another process won the race; its copy is identical
    if (!fs::exists(target / ".complete")) {
      throw input_error("cannot install the Python worker in " + target.string(),
                        "make " + cache.string() + " writable, or set XDG_CACHE_HOME");
    }
  }
  return target;
}

}  // namespace mblast
