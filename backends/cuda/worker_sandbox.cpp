#include "cuda/worker_sandbox.hpp"

#include <fcntl.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "cuda/compile_cache.hpp"
#include "mblast/error.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;

// The file system read-only, devices (GPUs) usable, a private /dev/shm; the worker's own scratch
// folder and the hidden folders are added per worker (bwrap_prefix).
const std::vector<std::string> kBwrap = {"bwrap",
                                         "--unshare-net",
                                         "--unshare-ipc",
                                         "--die-with-parent",
                                         "--ro-bind",
                                         "/",
                                         "/",
                                         "--dev-bind",
                                         "/dev",
                                         "/dev",
                                         "--proc",
                                         "/proc",
                                         "--tmpfs",
                                         "/dev/shm"};
const std::vector<std::string> kUnshare = {"unshare", "-n", "--"};

// `compile_cache_at`: where the worker sees its compile caches (compile_cache.hpp); empty: below
// its scratch folder, where they are.
std::vector<std::string> bwrap_prefix(const WorkerConfig& config, const fs::path& scratch,
                                      const fs::path& compile_cache_at) {
  std::vector<std::string> argv = kBwrap;
  for (const auto& path : config.hidden) argv.insert(argv.end(), {"--tmpfs", path.string()});
  if (!config.problem_cache.empty())
    argv.insert(argv.end(), {"--tmpfs", config.problem_cache.string()});
  argv.insert(argv.end(), {"--bind", scratch.string(), scratch.string()});
  if (!compile_cache_at.empty()) {
    argv.insert(argv.end(),
                {"--bind", worker_compile_cache(scratch).string(), compile_cache_at.string()});
  }
  argv.push_back("--");
  return argv;
}

// Whether `prefix true` runs; why not, in `why`.
bool works(std::vector<std::string> prefix, std::string* why = nullptr) {
  if (!find_program(prefix.front())) {
    if (why) *why = prefix.front() + " is not installed";
    return false;
  }
  prefix.push_back("true");
  ProcessSpec spec;
  spec.argv = std::move(prefix);
  spec.timeout = std::chrono::seconds(10);
  try {
    const ProcessResult result = run_process(spec);
    if (why && !result.ok()) *why = result.describe() + ": " + result.err.substr(0, 300);
    return result.ok();
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

}  // namespace

const std::string& detect_sandbox() {
  static const std::string mode = [] {
    if (const char* forced = std::getenv("MBLAST_SANDBOX"); forced && *forced) {
      const std::string value = forced;
      if (value == "bwrap" || value == "unshare" || value == "none") return value;
      spdlog::warn("ignoring MBLAST_SANDBOX={} (expected bwrap, unshare or none)", value);
    }
    std::vector<std::string> probe = kBwrap;
    probe.push_back("--");
    std::string why;
    if (works(probe, &why)) return std::string("bwrap");
    if (works(kUnshare)) {
      spdlog::warn(
          "candidate code can write wherever you can: bwrap does not work here ({}), so workers "
          "only lose the network (`unshare -n`); install bubblewrap for a read-only sandbox",
          why);
      return std::string("unshare");
    }
    spdlog::warn(
        "workers run without network isolation: neither bwrap nor `unshare -n` works here; "
        "install bubblewrap to sandbox candidate code");
    return std::string("none");
  }();
  return mode;
}

void unwrap_bwrap_status(ProcessResult& result) {
  if (result.term_signal == 0 && result.exit_code > 128 && result.exit_code <= 128 + 64) {
    result.term_signal = result.exit_code - 128;
    result.exit_code = -1;
  }
}

ScratchDir::ScratchDir(const fs::path& root) {
  fs::create_directories(root);
  std::string pattern = (root / "mblast-worker-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw job_error("cannot create a scratch directory under " + root.string() + ": " +
                        std::error_code(errno, std::generic_category()).message(),
                    "check that the scratch root is writable and has space");
  }
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code error;
  fs::remove_all(path_, error);
  if (error) spdlog::warn("cannot remove worker directory {}: {}", path_.string(), error.message());
}

ProcessSpec worker_spec(const WorkerConfig& config, const std::string& sandbox, const fs::path& dir,
                        int cache_fd, const fs::path& compile_cache_at) {
  ProcessSpec spec;
  if (sandbox == "bwrap") spec.argv = bwrap_prefix(config, dir, compile_cache_at);
  const fs::path compile_cache =
      compile_cache_at.empty() ? worker_compile_cache(dir) : compile_cache_at;
  if (sandbox == "unshare") spec.argv = kUnshare;
  spec.argv.insert(spec.argv.end(), {config.python.string(), "-m", "mblast_worker", "serve"});
  spec.cwd = dir;
  spec.scrub_secrets = true;
  spec.env = {{"PYTHONPATH", config.worker_dir.string()},
              {"MBLAST_DEVICE", config.device},
              {"PYTHONUNBUFFERED", "1"},
              {"PYTHONDONTWRITEBYTECODE", "1"},
              {"TMPDIR", dir.string()},
              {"HOME", dir.string()},
              {"TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir(compile_cache).string()},
              {"TRITON_CACHE_DIR", triton_cache_dir(compile_cache).string()}};
  for (const auto& [name, value] : config.env) spec.env[name] = value;
  if (cache_fd >= 0) {
    spec.pass_fds = {cache_fd};
    spec.env["MBLAST_CACHE_FD"] = "3";
  }
  spec.limit_address_space_bytes = config.address_space_bytes;
  spec.limit_open_files = config.open_files;
  return spec;
}

WorkerConfig resolved_worker_config(WorkerConfig config) {
  const auto python = find_program(config.python.string());
  if (!python) {
    throw input_error("cannot run the worker: no Python at '" + config.python.string() + "'",
                      "install python3 or point MBLAST_PYTHON at one");
  }
  config.python = fs::absolute(*python);
  config.worker_dir = fs::absolute(config.worker_dir);
  if (config.scratch_root.empty()) config.scratch_root = fs::temp_directory_path();
  config.scratch_root = fs::absolute(config.scratch_root);
  if (!config.problem_cache.empty()) config.problem_cache = fs::absolute(config.problem_cache);
  for (auto& path : config.hidden) path = fs::absolute(path);
  return config;
}

int open_problem_cache(const fs::path& path) {
  if (path.empty()) return -1;
  std::error_code ec;
  fs::create_directories(path, ec);
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    spdlog::warn("cannot open the problem cache {} ({}); references are recomputed every time",
                 path.string(), std::error_code(errno, std::generic_category()).message());
  }
  return fd;
}

const fs::path& with_compile_cache_folder(const fs::path& scratch) {
  std::error_code ec;
  fs::create_directories(worker_compile_cache(scratch), ec);
  return scratch;
}

fs::path shared_compile_cache_at(const std::string& sandbox) {
  if (sandbox != "bwrap") return {};
  fs::path at = compile_cache_mount_point();
  return prepare_compile_cache_mount_point(at) ? at : fs::path();
}

}  // namespace mblast
