#pragma once
// Evaluating a candidate ahead of its step (`optimize --prebuild`, the builder half of a
// builder/runner split): its eval request, with "hold", runs as a background call of the pool
// (paused whenever another call times its candidate) until the worker has made the candidate's
// first call, where torch.compile, Triton and cuDNN do their lazy work, and holds. When the loop
// then judges the same text with the same request, that worker goes on as the evaluation; the
// compiled candidate is not made again. Only for candidates whose code is trusted (mblast's own
// built-ins): the caller's check.
//
// The loop guesses step N+1 before step N is judged, and step N's evaluation, of another text,
// comes first. So a guess may come while the one for step N still waits: it waits its turn
// (pending) until step N's evaluation has taken the one ahead, or judged another text of the same
// problem (the guess was wrong; its worker is killed). An LLM's step that judges several
// candidates (fixes) finds a wrong guess in the second: the guess for the next step is lost.
#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cuda/worker_pool.hpp"

namespace mblast {

// One evaluation ahead at a time, on a thread of its own, and at most one pending.
class Primer {
 public:
  explicit Primer(WorkerPool& workers) : workers_(workers) {}
  ~Primer() { stop(); }
  Primer(const Primer&) = delete;
  Primer& operator=(const Primer&) = delete;

  // Evaluates `request` (the eval request of `candidate`; "hold" is added) ahead, now or once the
  // one ahead is taken or found wrong (replacing an older pending one). False after stop().
  bool start(nlohmann::json request, const CallLimits& limits, const CompileCacheUse& compile_cache,
             const std::filesystem::path& candidate);
  // The evaluation `request` asks for, by the worker ahead where it is for a candidate of the same
  // text and the same request otherwise (waiting for it to hold); nullopt where there is none or
  // it ended before its hold without an answer: the caller judges afresh.
  std::optional<WorkerOutcome> take(const nlohmann::json& request,
                                    const std::filesystem::path& candidate);
  // Kills the evaluation ahead, held or not yet, and forgets the pending one (the run has ended).
  void cancel();
  // The same, and later starts are refused.
  void stop();

 private:
  struct Ahead {
    nlohmann::json request;
    CallLimits limits;
    CompileCacheUse compile_cache;
    std::filesystem::path candidate;
  };
  // With mutex_ held:
  void launch(Ahead ahead);
  void launch_pending();
  void drop_current();

  WorkerPool& workers_;
  std::mutex mutex_;
  // The evaluation ahead: its thread runs the background call until the hold, writes held_, then
  // clears starting_; joinable until take() or drop_current() joins it.
  std::thread thread_;
  WorkerPool::HeldCall held_;
  std::atomic<bool> starting_{false};
  // Whether the next evaluation of another text of the problem is of the step it was guessed
  // for (a wrong guess then) rather than of the step it was guessed in.
  bool its_turn_next_ = false;
  std::string text_key_;     // of its candidate
  nlohmann::json compared_;  // its request without the candidate's path and "hold"
  std::optional<Ahead> pending_;
  bool stopped_ = false;
};

}  // namespace mblast
