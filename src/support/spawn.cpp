#include "support/spawn.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <map>
#include <system_error>
#include <vector>

#include "mblast/error.hpp"

extern char** environ;

namespace mblast::detail {
namespace {

constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, linux/close_range.h

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
  std::vector<int> pass_fds;  // become 3, 4, ...
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

  // Move every descriptor we dup from above the targets first (0, 1, 2 and 3.. for pass_fds),
  // so that one dup2 cannot overwrite the source of another (the parent might have been started
  // with 0, 1 or 2 closed).
  const int first_free = 3 + static_cast<int>(plan.pass_fds.size());
  int report = ::fcntl(plan.report_fd, F_DUPFD_CLOEXEC, first_free);
  if (report < 0) report = plan.report_fd;
  std::array<int, 3> moved{};
  for (std::size_t i = 0; i < 3; ++i) {
    moved[i] = ::fcntl(plan.stdio[i], F_DUPFD_CLOEXEC, first_free);
    if (moved[i] < 0) child_fail(report, ChildStage::kStreams);
  }
  std::array<int, 8> passed{};
  for (std::size_t i = 0; i < plan.pass_fds.size() && i < passed.size(); ++i) {
    passed[i] = ::fcntl(plan.pass_fds[i], F_DUPFD_CLOEXEC, first_free);
    if (passed[i] < 0) child_fail(report, ChildStage::kStreams);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    if (::dup2(moved[i], static_cast<int>(i)) < 0) child_fail(report, ChildStage::kStreams);
  }
  for (std::size_t i = 0; i < plan.pass_fds.size() && i < passed.size(); ++i) {
    if (::dup2(passed[i], 3 + static_cast<int>(i)) < 0) child_fail(report, ChildStage::kStreams);
  }
  // Descriptors other threads opened without O_CLOEXEC must not leak into the child.
  ::syscall(SYS_close_range, static_cast<unsigned>(first_free), ~0U, kCloseRangeCloexec);

  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) child_fail(report, ChildStage::kChdir);
  for (const Limit& limit : plan.limits) {
    if (::setrlimit(limit.resource, &limit.value) != 0) {
      child_fail(report, ChildStage::kLimits);
    }
  }
  ::execve(plan.program, plan.argv.data(), plan.envp.data());
  child_fail(report, ChildStage::kExec);
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

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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

Started spawn(const ProcessSpec& spec) {
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
  if (spec.pass_fds.size() > 8) {
    throw input_error("cannot run '" + program + "': more than 8 descriptors to pass");
  }
  plan.pass_fds = spec.pass_fds;
  plan.report_fd = report.write.get();

  Started started;
  started.start = Clock::now();
  started.pid = ::fork();
  if (started.pid < 0) {
    throw job_error("cannot run '" + program + "': fork failed: " + errno_text(errno),
                    "the machine may be out of processes or memory");
  }
  if (started.pid == 0) run_child(plan);

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
    reap(started.pid);
    throw start_error(spec, failure);
  }

  started.in = std::move(in.write);
  started.out = std::move(out.read);
  started.err = std::move(err.read);
  started.pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, started.pid, 0)));
  for (const Fd* fd : {&started.in, &started.out, &started.err}) set_nonblocking(*fd);
  return started;
}

bool has_exited(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno != EINTR;
  }
  return info.si_pid != 0;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

SigpipeGuard::SigpipeGuard() {
  sigemptyset(&pipe_set_);
  sigaddset(&pipe_set_, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
}

SigpipeGuard::~SigpipeGuard() {
  if (!was_pending_) {
    const timespec zero{};
    while (::sigtimedwait(&pipe_set_, nullptr, &zero) == SIGPIPE) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace mblast::detail
