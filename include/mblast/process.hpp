#pragma once
// Running child processes: candidate code, compilers, the Python worker, probes.
// Every child gets its own process group; on timeout the whole group is killed and reaped, so
// no grandchild outlives the call and no zombie is left behind.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mblast {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
  std::filesystem::path cwd;      // empty: inherit
  // Environment: the parent's, minus every variable whose name looks like a secret (see
  // is_secret_env_name) when scrub_secrets is set, then with `env` applied (a value of
  // std::nullopt removes the variable; an explicit value is passed even for a secret name).
  std::map<std::string, std::optional<std::string>> env;
  bool scrub_secrets = true;
  std::string stdin_data;                           // written to the child's stdin, then closed
  std::chrono::milliseconds timeout{60'000};        // wall clock; 0 means none
  std::size_t max_output_bytes = 16 * 1024 * 1024;  // per stream; the rest is dropped
  // Resource limits applied in the child before exec (0 = leave as inherited).
  std::size_t limit_address_space_bytes = 0;
  unsigned limit_cpu_seconds = 0;
  unsigned limit_open_files = 0;
  // Descriptors the child inherits as 3, 4, ... in this order (every other one is closed at exec).
  std::vector<int> pass_fds;
};

struct ProcessResult {
  int exit_code = -1;      // valid when exited normally
  int term_signal = 0;     // non-zero when killed by a signal
  bool timed_out = false;  // killed by us at the timeout
  bool output_truncated = false;
  std::string out;
  std::string err;
  double wall_seconds = 0;
  double timeout_seconds = 0;  // the limit that was hit, when timed_out

  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  // "exit 3", "killed by SIGSEGV (signal 11)", "timed out after 5.0 s": for messages.
  std::string describe() const;
};

// Runs to completion (or timeout). Throws mblast::Error only when the process cannot be started
// at all (e.g. the program does not exist); a failing child is a normal result.
ProcessResult run_process(const ProcessSpec& spec);

// Finds an executable on PATH; nullopt if absent.
std::optional<std::filesystem::path> find_program(const std::string& name);

// True for environment variable names that look like secrets, case-insensitively: names ending
// in _API_KEY or _TOKEN, or containing SECRET or PASSWORD.
bool is_secret_env_name(const std::string& name);

}  // namespace mblast
