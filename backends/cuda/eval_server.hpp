#pragma once
// The eval server: `mblast eval` and `mblast optimize` on a GPU hand their candidates to a
// long-lived mblast process of the same user that keeps Python workers started ahead (PyTorch
// imported, CUDA initialised; two, MBLAST_EVAL_SERVER_PRESTART, growing up to four,
// MBLAST_EVAL_SERVER_PRESTART_MAX, when calls find theirs still starting), so that a run of `mblast
// eval` commands, or the runs of a batch, do not pay the worker's start-up (10-16 s on the H200)
// each time. A request carries the run's --time-limit as a wall-clock deadline. Evaluation is
// unchanged: the server calls evaluate_all() with its pool, one request at a time (which also keeps
// two evaluations from timing on one GPU at once), and every candidate still runs in a fresh,
// sandboxed worker process that serves only it.
//
// A server serves one configuration (binary, Python, device, cache, sandbox and device
// environment): it listens on a Unix socket in a private folder ($XDG_RUNTIME_DIR/mblast, else
// /tmp/mblast-UID, mode 0700) named after a hash of that configuration, and exits after
// MBLAST_EVAL_SERVER_IDLE_S seconds (default 900) without a request. The first `mblast eval`
// starts it; MBLAST_EVAL_SERVER=0 (or --no-server) judges in the calling process instead, as does
// any failure to reach a server.
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/cuda_eval.hpp"
#include "mblast/eval_options.hpp"

namespace mblast {

// Whether `mblast eval` with these options uses a server by default: CUDA devices, unless
// MBLAST_EVAL_SERVER says otherwise (1: always, 0: never).
bool eval_server_wanted(const EvalOptions& options);

// Judges candidates through the server for (options, python), starting one if none is up.
// nullopt when no server could be reached (the caller judges locally); throws mblast::Error as
// evaluate_all() does when the server reports a bad problem or bad usage.
std::optional<std::vector<nlohmann::json>> evaluate_via_server(
    const EvalOptions& options, const std::vector<std::filesystem::path>& candidates,
    const std::filesystem::path& python);

// Asks the running server for (options, python) to evaluate `candidate` ahead (primer.hpp), up
// to its first call, for a later request of the same candidate to take over, guessed in step
// `step` of the run; with `cancel`, to kill the one ahead. True when one started. No server up:
// false, and none is started for it.
bool evaluate_ahead_via_server(const EvalOptions& options, const std::filesystem::path& candidate,
                               const std::filesystem::path& python, bool cancel = false,
                               int step = 0);
// Tells the running server's evaluation ahead that step `step` of options.problem's run begins
// (Primer::begin_step). No server up: nothing.
void begin_step_via_server(const EvalOptions& options, const std::filesystem::path& python,
                           int step);

// The server's main loop (`mblast internal eval-server`); returns the exit code.
int run_eval_server(const std::filesystem::path& socket, const std::filesystem::path& python,
                    const std::string& identity);

// EvalOptions to and from JSON (the fields `mblast eval` sets), for the server's requests.
nlohmann::json eval_options_to_json(const EvalOptions& options);
EvalOptions eval_options_from_json(const nlohmann::json& j);

}  // namespace mblast
