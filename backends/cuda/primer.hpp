#pragma once
// Evaluating a candidate ahead of its step (`optimize --prebuild`, the builder half of a
// builder/runner split): its eval request, with "hold", runs as a background call of the pool
// (paused whenever another call times its candidate) until the worker has made the candidate's
// first call, where torch.compile, Triton and cuDNN do their lazy work, and holds. When the loop
// then judges the same text with the same request, that worker goes on as the evaluation; the
// compiled candidate is not made again. Only for candidates whose code is trusted (mblast's own
// built-ins): the caller's check.
//
// The loop guesses step N+1 before step N is judged, and step N's evaluations, of other texts,
// come first: as many as step N makes (an LLM's step judges its fixes too). So a guess may come
// while the one for step N still waits: it waits its turn (pending) until step N's evaluation has
// taken the one ahead, or judged another text of the same problem (the guess was wrong; its worker
// is killed). The loop says where each step begins (begin_step): a guess is wrong only when a
// later step than the one it was guessed in judges another text.
#include <atomic>
#include <filesystem>
#include <map>
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
  // one ahead is taken or found wrong (replacing an older pending one); `step` is the step of the
  // problem's run that guessed it, begun from now on if not before. False after stop().
  bool start(nlohmann::json request, const CallLimits& limits, const CompileCacheUse& compile_cache,
             const std::filesystem::path& candidate, int step = 0);
  // The evaluation `request` asks for, by the worker ahead where it is for a candidate of the same
  // text and the same request otherwise (waiting for it to hold); nullopt where there is none or
  // it ended before its hold without an answer: the caller judges afresh.
  std::optional<WorkerOutcome> take(const nlohmann::json& request,
                                    const std::filesystem::path& candidate);
  // Step `step` of the run judging `problem` (the requests' "problem") begins: guesses made from
  // now on were made in it, and an evaluation ahead guessed in an earlier step is for it (or was).
  void begin_step(const std::string& problem, int step);
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
    int guessed_in = 0;  // the step of its problem it was guessed in
  };
  // With mutex_ held:
  void launch(Ahead ahead);
  void launch_pending();
  void drop_current();
  int step_of(const nlohmann::json& request) const;

  WorkerPool& workers_;
  std::mutex mutex_;
  // The evaluation ahead: its thread runs the background call until the hold, writes held_, then
  // clears starting_; joinable until take() or drop_current() joins it.
  std::thread thread_;
  WorkerPool::HeldCall held_;
  std::atomic<bool> starting_{false};
  std::map<std::string, int> steps_;  // per problem, the step begun last
  int guessed_in_ = 0;                // of the evaluation ahead
  std::string text_key_;              // of its candidate
  nlohmann::json compared_;           // its request without the candidate's path and "hold"
  std::optional<Ahead> pending_;
  bool stopped_ = false;
};

}  // namespace mblast
