#pragma once
// How the worker pool (worker_pool.hpp) starts one worker: the sandbox it runs in, its scratch
// folder, its command line and environment, and the problem cache it is handed.
#include <filesystem>
#include <string>

#include "cuda/worker_pool.hpp"
#include "mblast/process.hpp"

namespace mblast {

// "bwrap", "unshare" or "none": probed once per process, with the same options the workers get.
// MBLAST_SANDBOX (bwrap, unshare or none) forces one.
const std::string& detect_sandbox();

// bwrap runs the worker as its child and exits with 128 + N when the worker dies by signal N:
// turns that back into the worker's own signal.
void unwrap_bwrap_status(ProcessResult& result);

// The config with absolute paths (the worker starts in its scratch folder) and the system's temp
// folder as the scratch root where none is set; an input error when config.python is not found.
WorkerConfig resolved_worker_config(WorkerConfig config);

// The problem cache, created if missing (bwrap mounts over it) and opened for the workers; -1
// for an empty path, or (with a warning) one that cannot be opened.
int open_problem_cache(const std::filesystem::path& path);

// A worker's own folder under `root` (cwd, TMPDIR and HOME), removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::filesystem::path& root);
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The scratch folder, with the folder of its compile caches made (the sandbox mounts it).
const std::filesystem::path& with_compile_cache_folder(const std::filesystem::path& scratch);

// The mount point of the workers' compile caches, or empty where they cannot share them.
std::filesystem::path shared_compile_cache_at(const std::string& sandbox);

// The worker's process in `dir` under `sandbox`, the problem cache as fd 3 where `cache_fd` is
// open; `compile_cache_at`: where it sees its compile caches (compile_cache.hpp), empty: below
// `dir`, where they are.
ProcessSpec worker_spec(const WorkerConfig& config, const std::string& sandbox,
                        const std::filesystem::path& dir, int cache_fd,
                        const std::filesystem::path& compile_cache_at);

}  // namespace mblast
