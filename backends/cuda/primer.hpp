#pragma once
// Compiling a candidate ahead of its evaluation (`optimize --prebuild`, the builder half of a
// builder/runner split): the candidate's first call in a background call of the pool, which the
// pool pauses whenever another call times its candidate, keeping what torch.compile, Triton and
// cuDNN made in the problem's compile cache (compile_cache.hpp). The candidate's evaluation, a
// step later, starts from that cache. Only for candidates whose caches are trusted (mblast's own
// built-ins): the caller's check.
#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "cuda/worker_pool.hpp"
#include "mblast/eval_options.hpp"

namespace mblast {

// The prime itself, on the calling thread: true when the candidate's first call returned. False
// at once where workers share no compile cache (no bwrap: nothing a prime made would be seen).
bool prime_candidate(const EvalOptions& options, const std::filesystem::path& candidate,
                     WorkerPool& workers);

// At most one prime in flight, on a thread of its own.
class Primer {
 public:
  explicit Primer(WorkerPool& workers) : workers_(workers) {}
  ~Primer() { stop(); }
  Primer(const Primer&) = delete;
  Primer& operator=(const Primer&) = delete;

  // Starts priming `candidate` of options.problem; false (nothing started) while a prime is in
  // flight or after stop().
  bool start(const EvalOptions& options, const std::filesystem::path& candidate);
  // Waits for the prime in flight where it is of `candidate`'s text: the candidate's evaluation
  // then starts from what the prime compiled instead of compiling it again beside it.
  void await(const std::filesystem::path& candidate);
  // Kills a prime in flight (the run it was for has ended).
  void cancel() { workers_.kill_background(); }
  // Kills a prime in flight and waits for its thread; later starts are refused.
  void stop();

 private:
  WorkerPool& workers_;
  std::mutex mutex_;  // guards thread_, text_key_ and stopped_
  std::thread thread_;
  std::string text_key_;  // of the candidate primed last
  std::atomic<bool> busy_{false};
  bool stopped_ = false;
};

}  // namespace mblast
