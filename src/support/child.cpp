#include "mblast/child.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <stdexcept>
#include <vector>

#include "mblast/support.hpp"
#include "support/spawn.hpp"

namespace mblast {
namespace {

using detail::Clock;
using detail::Fd;

constexpr auto kKillGrace = std::chrono::milliseconds(200);
// After the child exits, output still buffered in the pipes is read for at most this long; only
// a descendant that escaped the group (setsid) could keep the pipes open longer.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);
constexpr auto kExitPollTick = std::chrono::milliseconds(20);  // used only without a pidfd
constexpr std::size_t kChunk = 64 * 1024;

int wait_ms(Clock::time_point now, Clock::time_point wake) {
  if (wake <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, 60'000));
}

}  // namespace

struct Child::State {
  State(std::size_t max_bytes, StderrKeep keep_mode)
      : limit(max_bytes), keep(keep_mode), chunk(kChunk) {}
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (pid > 0 && !reaped) {
      ::kill(-pid, SIGKILL);
      detail::reap(pid);
    }
  }

  pid_t pid = -1;
  Clock::time_point start;
  Fd in, out, err, pidfd;
  const std::size_t limit;
  const StderrKeep keep;
  std::vector<char> chunk;

  std::string out_buf;
  std::size_t out_pos = 0;      // out_buf before this was returned by read_line
  std::size_t scanned = 0;      // out_buf before this holds no '\n' after out_pos
  bool out_overflow = false;    // stdout past the limit was dropped; read_line stops
  mutable std::string err_buf;  // in tail mode up to twice the limit, trimmed when read
  bool err_truncated = false;

  bool exited = false;
  bool killed = false;
  bool reaped = false;
  int status = 0;
  Clock::time_point drain_until{};
  std::optional<ProcessResult> result;

  // One round of waiting, at most until `wake`: reads what stdout and stderr have, writes
  // from `input` (advancing it) and notices the child's exit.
  void pump(Clock::time_point wake, std::string_view* input) {
    std::array<pollfd, 4> fds{};
    nfds_t count = 0;
    const auto watch = [&](const Fd& fd, short events) {
      if (fd) fds[count++] = {fd.get(), events, 0};
    };
    watch(out, POLLIN);
    watch(err, POLLIN);
    if (input != nullptr && !input->empty()) watch(in, POLLOUT);
    watch(pidfd, POLLIN);
    const auto now = Clock::now();
    if (!exited && !pidfd) wake = std::min(wake, now + kExitPollTick);
    if (::poll(fds.data(), count, wait_ms(now, wake)) > 0) {
      for (nfds_t i = 0; i < count; ++i) {
        if (fds[i].revents == 0) continue;
        if (fds[i].fd == out.get()) keep_out(read_chunk(out));
        if (fds[i].fd == err.get()) keep_err(read_chunk(err));
        if (fds[i].fd == in.get()) write_some(*input);
      }
    }
    note_exit();
  }

  void note_exit() {
    if (exited || !detail::has_exited(pid)) return;
    exited = true;
    pidfd.reset();
    drain_until = Clock::now() + kDrainAfterExit;
  }

  std::string_view read_chunk(Fd& fd) {
    const ssize_t got = ::read(fd.get(), chunk.data(), chunk.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return {};
    if (got <= 0) {
      fd.reset();
      return {};
    }
    return {chunk.data(), static_cast<std::size_t>(got)};
  }

  void keep_out(std::string_view data) {
    if (out_overflow || data.empty()) return;
    if (out_pos > 0 && out_pos * 2 >= out_buf.size()) {
      out_buf.erase(0, out_pos);
      scanned -= out_pos;
      out_pos = 0;
    }
    const std::size_t unread = out_buf.size() - out_pos;
    const std::size_t room = limit > unread ? limit - unread : 0;
    if (data.size() > room) {
      out_overflow = true;
      data = data.substr(0, room);
    }
    out_buf.append(data);
  }

  void keep_err(std::string_view data) {
    if (keep == StderrKeep::head) {
      const std::size_t room = limit > err_buf.size() ? limit - err_buf.size() : 0;
      if (data.size() > room) err_truncated = true;
      err_buf.append(data.substr(0, std::min(room, data.size())));
      return;
    }
    err_buf.append(data);
    if (err_buf.size() > limit) err_truncated = true;
    if (err_buf.size() / 2 > limit) err_buf.erase(0, err_buf.size() - limit);  // amortized
  }

  const std::string& err_text() const {
    if (err_buf.size() > limit) err_buf.erase(0, err_buf.size() - limit);
    return err_buf;
  }

  void write_some(std::string_view& input) {
    const ssize_t put = ::write(in.get(), input.data(), std::min(input.size(), kChunk));
    if (put < 0) {
      // EPIPE: the child closed its stdin.
      if (errno != EINTR && errno != EAGAIN) in.reset();
      return;
    }
    input.remove_prefix(static_cast<std::size_t>(put));
  }

  std::optional<std::string> take_line() {
    const std::size_t newline = out_buf.find('\n', std::max(out_pos, scanned));
    if (newline == std::string::npos) {
      scanned = out_buf.size();
      return std::nullopt;
    }
    std::string line = out_buf.substr(out_pos, newline - out_pos);
    out_pos = scanned = newline + 1;
    return line;
  }

  void signal_group(int sig) {
    if (reaped) return;  // the pid, and so the group id, may belong to someone else by now
    ::kill(-pid, sig);
    if (sig == SIGKILL) killed = true;
  }

  void reap_now() {
    if (reaped) return;
    if (!exited) drain_until = Clock::now() + kDrainAfterExit;
    status = detail::reap(pid);
    reaped = exited = true;
    pidfd.reset();
    in.reset();
  }
};

Child::Child(const ProcessSpec& spec, StderrKeep keep)
    : state_(std::make_unique<State>(spec.max_output_bytes, keep)) {
  detail::Started started = detail::spawn(spec);
  state_->pid = started.pid;
  state_->start = started.start;
  state_->in = std::move(started.in);
  state_->out = std::move(started.out);
  state_->err = std::move(started.err);
  state_->pidfd = std::move(started.pidfd);
}

Child::~Child() = default;
Child::Child(Child&&) noexcept = default;
Child& Child::operator=(Child&&) noexcept = default;

int Child::pid() const { return state_ ? state_->pid : -1; }

bool Child::write(std::string_view data, Deadline deadline) {
  if (!state_) return false;
  State& state = *state_;
  const detail::SigpipeGuard sigpipe_guard;
  for (bool first = true; !data.empty(); first = false) {
    if (!state.in || state.exited) return false;
    if (!first && Clock::now() >= deadline) return false;
    state.pump(deadline, &data);
  }
  return true;
}

void Child::close_stdin() {
  if (state_) state_->in.reset();
}

std::optional<std::string> Child::read_line(Deadline deadline) {
  if (!state_) return std::nullopt;
  State& state = *state_;
  for (bool first = true;; first = false) {
    if (auto line = state.take_line()) return line;
    if (!state.out || state.out_overflow) return std::nullopt;
    const Deadline until = state.exited ? std::min(deadline, state.drain_until) : deadline;
    if (!first && Clock::now() >= until) return std::nullopt;
    state.pump(until, nullptr);
  }
}

ProcessResult Child::finish(Deadline deadline) {
  if (!state_) throw std::logic_error("mblast::Child::finish on a moved-from Child");
  State& state = *state_;
  if (state.result) return *state.result;
  state.in.reset();
  bool timed_out = false;
  std::optional<Clock::time_point> kill_at;
  while (true) {
    const auto now = Clock::now();
    if (!state.exited && now >= deadline && !kill_at) {
      state.signal_group(SIGTERM);
      timed_out = true;
      kill_at = now + kKillGrace;
    }
    if (kill_at && !state.killed && now >= *kill_at) state.signal_group(SIGKILL);
    if (state.exited && !state.killed) state.signal_group(SIGKILL);  // what the group left
    if (state.exited && ((!state.out && !state.err) || now >= state.drain_until)) break;

    Clock::time_point wake = Clock::time_point::max();
    if (!state.exited && !kill_at) wake = deadline;
    if (kill_at && !state.killed) wake = std::min(wake, *kill_at);
    if (state.exited) wake = std::min(wake, state.drain_until);
    state.pump(wake, nullptr);
  }
  state.reap_now();

  ProcessResult result;
  if (WIFEXITED(state.status)) result.exit_code = WEXITSTATUS(state.status);
  if (WIFSIGNALED(state.status)) result.term_signal = WTERMSIG(state.status);
  result.timed_out = timed_out;
  if (timed_out)
    result.timeout_seconds = std::chrono::duration<double>(deadline - state.start).count();
  result.out = state.out_buf.substr(state.out_pos);
  state.out_buf.clear();  // handed over in `out`
  state.out_pos = state.scanned = 0;
  result.err = state.err_text();
  result.output_truncated = state.out_overflow || state.err_truncated;
  result.wall_seconds = seconds_since(state.start);
  state.result = result;
  return result;
}

void Child::kill() {
  if (!state_) return;
  state_->signal_group(SIGKILL);
  state_->reap_now();
}

void Child::kill_group() {
  // Only the signal: the reading thread owns the rest of the state (reaped stays false until
  // its finish, which must come after this call).
  if (state_ && !state_->reaped) ::kill(-state_->pid, SIGKILL);
}

void Child::pause() {
  if (state_) state_->signal_group(SIGSTOP);
}

void Child::resume() {
  if (state_) state_->signal_group(SIGCONT);
}

bool Child::exited() {
  if (!state_) return true;
  state_->note_exit();
  return state_->exited;
}

const std::string& Child::stderr_tail() const {
  static const std::string kEmpty;
  return state_ ? state_->err_text() : kEmpty;
}

}  // namespace mblast
