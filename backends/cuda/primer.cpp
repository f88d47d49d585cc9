#include "cuda/primer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "cuda/compile_cache.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

// What must agree between the request evaluated ahead and the one that takes it over.
nlohmann::json compared_part(nlohmann::json request) {
  request.erase("candidate");
  request.erase("hold");
  return request;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

bool Primer::start(nlohmann::json request, const CallLimits& limits,
                   const CompileCacheUse& compile_cache, const fs::path& candidate) {
  const std::lock_guard lock(mutex_);
  if (stopped_ || starting_) return false;
  drop();
  text_key_ = candidate_text_key(candidate);
  compared_ = compared_part(request);
  request["hold"] = true;
  starting_ = true;
  thread_ = std::thread([this, request = std::move(request), limits, compile_cache, candidate] {
    const auto started = std::chrono::steady_clock::now();
    held_ = workers_.call_until_held(request, limits, compile_cache);
    spdlog::debug(
        "prebuild of {}: {} after {:.2f} s", candidate.filename().string(),
        WorkerPool::is_held(held_) ? "held after its first call" : "ended before its hold",
        seconds_since(started));
    starting_ = false;
  });
  return true;
}

std::optional<WorkerOutcome> Primer::take(const nlohmann::json& request,
                                          const fs::path& candidate) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable() && !held_) return std::nullopt;
  if (text_key_ != candidate_text_key(candidate) || compared_ != compared_part(request)) {
    return std::nullopt;
  }
  const auto waiting = std::chrono::steady_clock::now();
  if (thread_.joinable()) thread_.join();
  spdlog::debug("{} waited {:.2f} s for its evaluation ahead", candidate.filename().string(),
                seconds_since(waiting));
  WorkerPool::HeldCall held = std::move(held_);
  text_key_.clear();
  lock.unlock();
  const bool was_held = WorkerPool::is_held(held);
  WorkerOutcome outcome = workers_.resume(std::move(held));
  // Ended before its hold without an answer (killed, a worker that did not start, out of time
  // while paused beside other calls): no verdict on the candidate.
  if (!was_held && !outcome.completed) return std::nullopt;
  return outcome;
}

void Primer::drop() {
  // Until the call in flight returns: it may not be registered with the pool yet (still taking a
  // worker) when the first kill comes.
  while (starting_) {
    workers_.kill_background();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (thread_.joinable()) thread_.join();
  held_.reset();
  text_key_.clear();
}

void Primer::cancel() {
  const std::lock_guard lock(mutex_);
  drop();
}

void Primer::stop() {
  const std::lock_guard lock(mutex_);
  stopped_ = true;
  workers_.stop_background();
  drop();
}

}  // namespace mblast
