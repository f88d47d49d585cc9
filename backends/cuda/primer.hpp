#pragma once
// Evaluating a candidate ahead of its step (`optimize --prebuild`, the builder half of a
// builder/runner split): its eval request, with "hold", runs as a background call of the pool
// (paused whenever another call times its candidate) until the worker has made the candidate's
// first call, where torch.compile, Triton and cuDNN do their lazy work, and holds. When the loop
// then judges the same text with the same request, that worker goes on as the evaluation; the
// compiled candidate is not made again. Only for candidates whose code is trusted (mblast's own
// built-ins): the caller's check.
#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cuda/worker_pool.hpp"

namespace mblast {

// At most one evaluation ahead, started on a thread of its own.
class Primer {
 public:
  explicit Primer(WorkerPool& workers) : workers_(workers) {}
  ~Primer() { stop(); }
  Primer(const Primer&) = delete;
  Primer& operator=(const Primer&) = delete;

  // Starts `request` (the eval request of `candidate`; "hold" is added) until its hold, in place
  // of the one held before. False (nothing started) while the last one has not reached its hold
  // yet, or after stop().
  bool start(nlohmann::json request, const CallLimits& limits, const CompileCacheUse& compile_cache,
             const std::filesystem::path& candidate);
  // The evaluation `request` asks for, by the worker held for a candidate of the same text and
  // the same request otherwise (waiting for it to hold); nullopt where there is none or it ended
  // before its hold without an answer (the caller judges afresh). Another held one stays.
  std::optional<WorkerOutcome> take(const nlohmann::json& request,
                                    const std::filesystem::path& candidate);
  // Kills the evaluation ahead, held or not yet (the run it was for has ended).
  void cancel();
  // The same, and later starts are refused.
  void stop();

 private:
  void drop();  // with mutex_ held

  WorkerPool& workers_;
  std::mutex mutex_;
  std::thread thread_;  // the background call until its hold; it writes held_, then starting_
  WorkerPool::HeldCall held_;
  std::atomic<bool> starting_{false};
  std::string text_key_;     // of the candidate evaluated ahead
  nlohmann::json compared_;  // its request without the candidate's path and "hold"
  bool stopped_ = false;
};

}  // namespace mblast
