#pragma once
// Internal: starting a child process, shared by run_process and Child. The child gets its own
// process group, the built environment, the rlimits and the working directory of its
// ProcessSpec; a failure before exec is reported back and thrown as mblast::Error.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "mblast/process.hpp"

namespace mblast::detail {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A started child. The parent ends of its pipes are close-on-exec and non-blocking; `pidfd`
// becomes readable when the child exits (invalid where the kernel has no pidfd_open).
struct Started {
  pid_t pid = -1;
  Clock::time_point start;
  Fd in, out, err, pidfd;
};

// Throws mblast::Error (like run_process) when the program cannot be found or started.
Started spawn(const ProcessSpec& spec);

// True once the child has exited. It is left a zombie (not reaped), so its pid, which is also
// its process group id, cannot be reused while the rest of the group is still being killed.
bool has_exited(pid_t pid);

// Waits for the child and returns its wait status.
int reap(pid_t pid);

std::optional<std::filesystem::path> search_path(const std::string& name, std::string_view path);
constexpr std::string_view kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// Blocks SIGPIPE in this thread while we write to a child that may stop reading; the write then
// fails with EPIPE instead, and the pending signal is consumed before the mask is restored.
class SigpipeGuard {
 public:
  SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  ~SigpipeGuard();

 private:
  sigset_t pipe_set_{};
  sigset_t old_mask_{};
  bool was_pending_ = false;
};

}  // namespace mblast::detail
