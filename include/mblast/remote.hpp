#pragma once
// Where a native runner executes: this machine, or a board or phone reached over ssh or adb, in
// the manner of TVM's RPC runner. A run gets a fresh working folder on the target; its inputs are
// pushed there, the runner is run there with a timeout, and its outputs are pulled back.
//
// Specs: "local" (a temporary folder here, through the same steps), "ssh:[USER@]HOST" (ssh and
// scp from $PATH; keys and ~/.ssh/config as the user set them up) and "adb:SERIAL" (adb from
// $PATH; working folders under /data/local/tmp, or $MBLAST_ADB_TMP).
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mblast/process.hpp"

namespace mblast {

class RemoteTarget {
 public:
  virtual ~RemoteTarget() = default;
  virtual std::string name() const = 0;
  // A fresh working folder on the target (an absolute path there).
  virtual std::string make_workdir() = 0;
  virtual void push(const std::filesystem::path& local, const std::string& remote) = 0;
  // Runs argv on the target. The result reads as run_process's: timed_out when the timeout hit
  // (the remote process is killed too), term_signal when it died of a signal.
  virtual ProcessResult run(const std::vector<std::string>& argv, std::chrono::seconds timeout) = 0;
  virtual void pull(const std::string& remote, const std::filesystem::path& local) = 0;
  // Removes a working folder; failures are logged, never thrown.
  virtual void remove(const std::string& remote_dir) noexcept = 0;
};

// A working folder on a target for the lifetime of this object.
class RemoteWorkdir {
 public:
  explicit RemoteWorkdir(RemoteTarget& target) : target_(target), path_(target.make_workdir()) {}
  ~RemoteWorkdir() { target_.remove(path_); }
  RemoteWorkdir(const RemoteWorkdir&) = delete;
  RemoteWorkdir& operator=(const RemoteWorkdir&) = delete;
  // `name` inside the folder.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  RemoteTarget& target_;
  std::string path_;
};

// Throws input_error for an unknown spec.
std::unique_ptr<RemoteTarget> make_remote_target(const std::string& spec);

// One argument quoted for a POSIX shell ('it'\''s').
std::string shell_quote(const std::string& word);

}  // namespace mblast
