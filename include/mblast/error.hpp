#pragma once
// One exception type for every user-facing failure. The kind decides the process exit code:
// 0 ok, 1 the job failed, 2 bad usage or bad input (docs/ARCHITECTURE.md §8).
#include <stdexcept>
#include <string>

namespace mblast {

enum class ExitCode : int { ok = 0, job_failed = 1, bad_input = 2 };

class Error : public std::runtime_error {
 public:
  // `what` says what was wrong; `hint` says what to do about it (may be empty).
  Error(ExitCode code, const std::string& what, std::string hint = {})
      : std::runtime_error(what), code_(code), hint_(std::move(hint)) {}
  ExitCode code() const noexcept { return code_; }
  const std::string& hint() const noexcept { return hint_; }

 private:
  ExitCode code_;
  std::string hint_;
};

// Bad usage or bad input: unreadable files, malformed data, unknown names. Exit 2.
inline Error input_error(const std::string& what, std::string hint = {}) {
  return Error(ExitCode::bad_input, what, std::move(hint));
}
// The job itself failed (a wrong candidate, a run that could not finish). Exit 1.
inline Error job_error(const std::string& what, std::string hint = {}) {
  return Error(ExitCode::job_failed, what, std::move(hint));
}

}  // namespace mblast
