#include "mblast/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include "mblast/error.hpp"

extern char** environ;

namespace mblast {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kKillGrace = std::chrono::milliseconds(200);
// After the leader exits and its group is killed, output still buffered in the pipes is read for
// at most this long; only a descendant that escaped the group (setsid) could keep them open.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);
constexpr auto kExitPollTick = std::chrono::milliseconds(20);  // used only without a pidfd
constexpr std::size_t kChunk = 64 * 1024;
constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, linux/close_range.h

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
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

std::string errno_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

Pipe make_pipe(const std::string& program) {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    throw job_error("cannot run '" + program + "': cannot create a pipe: " + errno_text(errno),
                    "the process may be out of file descriptors; raise `ulimit -n`");
  }
  return {Fd(fds[0]), Fd(fds[1])};
}

void set_nonblocking(const Fd& fd) {
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK);
}

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::filesystem::path> search_path(const std::string& name, std::string_view path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  while (true) {
    const std::size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";  // POSIX: an empty PATH entry is the current directory
    const std::string candidate = dir + "/" + name;
    if (is_executable_file(candidate)) return std::filesystem::path(candidate);
    if (colon == std::string_view::npos) return std::nullopt;
    path.remove_prefix(colon + 1);
  }
}

constexpr std::string_view kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

std::vector<std::string> build_environment(const ProcessSpec& spec) {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(text.substr(0, eq));
    if (spec.scrub_secrets && is_secret_env_name(name)) continue;
    vars.emplace(std::move(name), text.substr(eq + 1));  // first wins, as with getenv()
  }
  for (const auto& [name, value] : spec.env) {
    if (value) {
      vars[name] = *value;
    } else {
      vars.erase(name);
    }
  }
  std::vector<std::string> result;
  result.reserve(vars.size());
  for (const auto& [name, value] : vars) result.push_back(name + "=" + value);
  return result;
}

std::string_view path_of(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (entry.starts_with("PATH=")) return std::string_view(entry).substr(5);
  }
  return kDefaultPath;
}

// What the child could not do before exec, sent to the parent through a close-on-exec pipe.
enum class ChildStage : int { kStreams = 1, kChdir, kLimits, kExec };
struct ChildFailure {
  int stage = 0;
  int error = 0;
};

struct Limit {
  int resource = 0;
  rlimit value{};
};

// Everything the child needs, prepared before fork: between fork and exec the child may only
// make async-signal-safe calls, so it must not allocate.
struct ChildPlan {
  const char* program = nullptr;
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* cwd = nullptr;
  std::vector<Limit> limits;
  std::array<int, 3> stdio{};
  int report_fd = -1;
};

void add_limit(std::vector<Limit>& limits, int resource, rlim_t value, rlim_t hard_extra = 0) {
  if (value == 0) return;
  rlimit current{};
  if (::getrlimit(resource, &current) != 0) return;
  const rlim_t soft = std::min(value, current.rlim_max);
  // Lowering the hard limit too keeps the untrusted child from raising it back.
  const rlim_t hard = std::min(value + hard_extra, current.rlim_max);
  limits.push_back({resource, {soft, hard}});
}

[[noreturn]] void child_fail(int report_fd, ChildStage stage) {
  const ChildFailure failure{static_cast<int>(stage), errno};
  [[maybe_unused]] const ssize_t ignored = ::write(report_fd, &failure, sizeof failure);
  ::_exit(127);
}

[[noreturn]] void run_child(const ChildPlan& plan) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Ignored signals stay ignored across exec; the parent may ignore SIGPIPE.
  for (const int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);

  // Move the pipe ends above 2 first, so one dup2 cannot overwrite the source of another (the
  // parent might have been started with 0, 1 or 2 closed).
  std::array<int, 3> moved{};
  for (std::size_t i = 0; i < 3; ++i) {
    moved[i] = ::fcntl(plan.stdio[i], F_DUPFD_CLOEXEC, 3);
    if (moved[i] < 0) child_fail(plan.report_fd, ChildStage::kStreams);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    if (::dup2(moved[i], static_cast<int>(i)) < 0) child_fail(plan.report_fd, ChildStage::kStreams);
  }
  // Descriptors other threads opened without O_CLOEXEC must not leak into the child.
  ::syscall(SYS_close_range, 3U, ~0U, kCloseRangeCloexec);

  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) child_fail(plan.report_fd, ChildStage::kChdir);
  for (const Limit& limit : plan.limits) {
    if (::setrlimit(limit.resource, &limit.value) != 0) {
      child_fail(plan.report_fd, ChildStage::kLimits);
    }
  }
  ::execve(plan.program, plan.argv.data(), plan.envp.data());
  child_fail(plan.report_fd, ChildStage::kExec);
}

Error start_error(const ProcessSpec& spec, const ChildFailure& failure) {
  const std::string& program = spec.argv[0];
  const std::string reason = errno_text(failure.error);
  switch (static_cast<ChildStage>(failure.stage)) {
    case ChildStage::kChdir:
      return input_error("cannot run '" + program + "': cannot change to directory '" +
                             spec.cwd.string() + "': " + reason,
                         "check that the working directory exists and is accessible");
    case ChildStage::kLimits:
      return job_error("cannot run '" + program + "': cannot set resource limits: " + reason,
                       "lower the requested limits or raise the hard limits (`ulimit -H`)");
    case ChildStage::kStreams:
      return job_error("cannot run '" + program +
                       "': cannot set up its standard streams: " + reason);
    case ChildStage::kExec:
      break;
  }
  std::string hint = "check that '" + program +
                     "' is installed and on PATH; `mblast doctor` checks the tools mblast uses";
  if (failure.error == EACCES) hint = "check that '" + program + "' is an executable file";
  if (failure.error == ENOEXEC) hint = "'" + program + "' is not a program this machine can run";
  return input_error("cannot run '" + program + "': " + reason, hint);
}

// Blocks SIGPIPE in this thread while we write to a child that may stop reading; the write then
// fails with EPIPE instead, and the pending signal is consumed before the mask is restored.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  ~SigpipeGuard() {
    if (!was_pending_) {
      const timespec zero{};
      while (::sigtimedwait(&pipe_set_, nullptr, &zero) == SIGPIPE) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  sigset_t pipe_set_{};
  sigset_t old_mask_{};
  bool was_pending_ = false;
};

// Drives one started child: feeds stdin, collects stdout and stderr, enforces the timeout and
// kills what is left of the process group once the leader has exited.
class Supervisor {
 public:
  Supervisor(pid_t pid, const ProcessSpec& spec, ProcessResult& result, Fd in, Fd out, Fd err)
      : pid_(pid),
        spec_(spec),
        result_(result),
        in_(std::move(in)),
        out_(std::move(out)),
        err_(std::move(err)),
        buffer_(kChunk) {}

  void run(Clock::time_point start) {
    if (spec_.timeout.count() > 0) deadline_ = start + spec_.timeout;
    pidfd_ = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
    if (spec_.stdin_data.empty()) in_.reset();
    for (const Fd* fd : {&in_, &out_, &err_}) {
      if (*fd) set_nonblocking(*fd);
    }
    while (step()) {
    }
  }

 private:
  bool step() {
    const auto now = Clock::now();
    if (!exited_ && deadline_ && now >= *deadline_ && !kill_at_) {
      signal_group(SIGTERM);
      result_.timed_out = true;
      result_.timeout_seconds = std::chrono::duration<double>(spec_.timeout).count();
      kill_at_ = now + kKillGrace;
    }
    if (kill_at_ && !killed_ && now >= *kill_at_) signal_group(SIGKILL);
    if (!exited_ && leader_exited()) {
      exited_ = true;
      if (!killed_) signal_group(SIGKILL);
      in_.reset();
      pidfd_.reset();
      drain_until_ = now + kDrainAfterExit;
    }
    if (exited_ && ((!out_ && !err_) || now >= drain_until_)) return false;

    std::array<pollfd, 4> fds{};
    nfds_t count = 0;
    const auto watch = [&](const Fd& fd, short events) {
      if (fd) fds[count++] = {fd.get(), events, 0};
    };
    watch(out_, POLLIN);
    watch(err_, POLLIN);
    watch(in_, POLLOUT);
    watch(pidfd_, POLLIN);
    if (::poll(fds.data(), count, wait_ms(now)) < 0) return true;  // EINTR: just go round

    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == out_.get()) read_some(out_, result_.out);
      if (fds[i].fd == err_.get()) read_some(err_, result_.err);
      if (fds[i].fd == in_.get()) write_some();
    }
    return true;
  }

  int wait_ms(Clock::time_point now) const {
    std::optional<Clock::time_point> wake;
    const auto earliest = [&](Clock::time_point t) { wake = wake ? std::min(*wake, t) : t; };
    if (!exited_ && deadline_ && !kill_at_) earliest(*deadline_);
    if (kill_at_ && !killed_) earliest(*kill_at_);
    if (exited_) earliest(drain_until_);
    if (!exited_ && !pidfd_) earliest(now + kExitPollTick);
    if (!wake) return -1;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*wake - now).count();
    return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, 60'000));
  }

  bool leader_exited() const {
    siginfo_t info{};
    // WNOWAIT leaves the leader a zombie, so its pid (the group id) cannot be reused before the
    // group is killed.
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      return errno != EINTR;
    }
    return info.si_pid != 0;
  }

  void signal_group(int sig) {
    ::kill(-pid_, sig);
    if (sig == SIGKILL) killed_ = true;
  }

  void read_some(Fd& fd, std::string& sink) {
    const ssize_t got = ::read(fd.get(), buffer_.data(), buffer_.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (got <= 0) {
      fd.reset();
      return;
    }
    const auto size = static_cast<std::size_t>(got);
    const std::size_t room =
        spec_.max_output_bytes > sink.size() ? spec_.max_output_bytes - sink.size() : 0;
    sink.append(buffer_.data(), std::min(room, size));
    if (size > room) result_.output_truncated = true;
  }

  void write_some() {
    const std::string& data = spec_.stdin_data;
    const std::size_t size = std::min(data.size() - written_, kChunk);
    const ssize_t put = ::write(in_.get(), data.data() + written_, size);
    if (put < 0) {
      // EPIPE: the child closed its stdin; the rest of the input is dropped.
      if (errno != EINTR && errno != EAGAIN) in_.reset();
      return;
    }
    written_ += static_cast<std::size_t>(put);
    if (written_ == data.size()) in_.reset();
  }

  pid_t pid_;
  const ProcessSpec& spec_;
  ProcessResult& result_;
  Fd in_, out_, err_, pidfd_;
  std::vector<char> buffer_;
  std::size_t written_ = 0;
  std::optional<Clock::time_point> deadline_, kill_at_;
  Clock::time_point drain_until_{};
  bool exited_ = false;
  bool killed_ = false;
};

void reap(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

bool is_secret_env_name(const std::string& name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return upper.ends_with("_API_KEY") || upper.ends_with("_TOKEN") ||
         upper.find("SECRET") != std::string::npos || upper.find("PASSWORD") != std::string::npos;
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  return search_path(name, path != nullptr ? std::string_view(path) : kDefaultPath);
}

std::string ProcessResult::describe() const {
  if (timed_out) {
    std::array<char, 64> text{};
    std::snprintf(text.data(), text.size(), "timed out after %.1f s", timeout_seconds);
    return text.data();
  }
  if (term_signal != 0) {
    const std::string number = std::to_string(term_signal);
    const char* abbrev = ::sigabbrev_np(term_signal);
    if (abbrev == nullptr) return "killed by signal " + number;
    return std::string("killed by SIG") + abbrev + " (signal " + number + ")";
  }
  return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    throw input_error("cannot run a process: the command line is empty",
                      "give the program to run as the first word of the command");
  }
  const std::string& program = spec.argv[0];
  const std::vector<std::string> env = build_environment(spec);
  const auto resolved = search_path(program, path_of(env));
  if (!resolved) {
    throw start_error(spec, {static_cast<int>(ChildStage::kExec), ENOENT});
  }
  const std::string resolved_text = resolved->string();
  const std::string cwd_text = spec.cwd.string();

  ChildPlan plan;
  plan.program = resolved_text.c_str();
  for (const std::string& arg : spec.argv) plan.argv.push_back(const_cast<char*>(arg.c_str()));
  plan.argv.push_back(nullptr);
  for (const std::string& var : env) plan.envp.push_back(const_cast<char*>(var.c_str()));
  plan.envp.push_back(nullptr);
  if (!cwd_text.empty()) plan.cwd = cwd_text.c_str();
  add_limit(plan.limits, RLIMIT_AS, spec.limit_address_space_bytes);
  add_limit(plan.limits, RLIMIT_CPU, spec.limit_cpu_seconds, 1);  // SIGXCPU first, then SIGKILL
  add_limit(plan.limits, RLIMIT_NOFILE, spec.limit_open_files);

  Pipe in = make_pipe(program);
  Pipe out = make_pipe(program);
  Pipe err = make_pipe(program);
  Pipe report = make_pipe(program);
  plan.stdio = {in.read.get(), out.write.get(), err.write.get()};
  plan.report_fd = report.write.get();

  ProcessResult result;
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw job_error("cannot run '" + program + "': fork failed: " + errno_text(errno),
                    "the machine may be out of processes or memory");
  }
  if (pid == 0) run_child(plan);

  in.read.reset();
  out.write.reset();
  err.write.reset();
  report.write.reset();
  ChildFailure failure;
  ssize_t got = 0;
  do {
    got = ::read(report.read.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    reap(pid, &status);
    throw start_error(spec, failure);
  }

  int status = 0;
  try {
    const SigpipeGuard sigpipe_guard;
    Supervisor(pid, spec, result, std::move(in.write), std::move(out.read), std::move(err.read))
        .run(start);
  } catch (...) {
    ::kill(-pid, SIGKILL);
    reap(pid, &status);
    throw;
  }
  reap(pid, &status);
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace mblast
