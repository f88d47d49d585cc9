#pragma once
// A child process that runs alongside the caller, for a conversation over its stdin and stdout
// (the Python worker's line protocol). Started like run_process: own process group, environment
// without secrets, rlimits, exec failures thrown as mblast::Error. The child is always reaped:
// finish(), kill() or the destructor, which kills the whole group if it is still running.
//
// Not thread-safe: use one Child from one thread at a time (it may move between threads).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mblast/process.hpp"

namespace mblast {

class Child {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Which part of stderr is kept once it exceeds max_output_bytes: the tail suits a
  // conversation (the latest messages), the head suits a compiler (the first errors).
  enum class StderrKeep { tail, head };

  // Starts the child; spec.timeout and spec.stdin_data are not used. Throws mblast::Error when
  // the child cannot be started (see run_process).
  explicit Child(const ProcessSpec& spec, StderrKeep keep = StderrKeep::tail);
  ~Child();
  Child(Child&&) noexcept;
  Child& operator=(Child&&) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  int pid() const;

  // Writes all of `data`, reading stdout and stderr meanwhile so that a child that talks while
  // it reads cannot deadlock us. False if the child closed stdin or exited, or at the deadline.
  bool write(std::string_view data, Deadline deadline);
  void close_stdin();

  // The next '\n'-terminated stdout line, without the '\n'. nullopt at EOF (an unterminated
  // last line stays unread, see finish), once the child has exited and its output is drained,
  // once stdout overflowed max_output_bytes of unread data, or at the deadline. The pipe is
  // read at least once even if the deadline has passed. stderr is drained meanwhile.
  std::optional<std::string> read_line(Deadline deadline);

  // Closes stdin and waits for the child to exit; at the deadline SIGTERMs the group, then
  // SIGKILLs it 200 ms later. Whatever the group left running after the child exited is
  // killed. Returns the status, the unread stdout in `out` and the kept stderr in `err`;
  // timeout_seconds counts from the start of the child. Calling it again returns the same.
  ProcessResult finish(Deadline deadline);

  // SIGKILLs the group now and reaps the child.
  void kill();
  // SIGKILLs the group without reaping, from another thread while one reads the child's output
  // (it sees the end of it; its finish reaps). The caller makes sure that finish has not begun.
  void kill_group();

  // SIGSTOPs / SIGCONTs the group: a child that must not compete for the machine for a while
  // (a worker starting while another one times its candidate).
  void pause();
  void resume();

  // Non-blocking: whether the child has exited (it is reaped only by finish, kill or ~Child).
  bool exited();

  const std::string& stderr_tail() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mblast
