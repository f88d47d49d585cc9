#include "cuda/primer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "cuda/compile_cache.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

// What must agree between the request evaluated ahead and the one that takes it over.
nlohmann::json compared_part(nlohmann::json request) {
  request.erase("candidate");
  request.erase("hold");
  return request;
}

}  // namespace

bool Primer::start(nlohmann::json request, const CallLimits& limits,
                   const CompileCacheUse& compile_cache, const fs::path& candidate, int step) {
  const std::lock_guard lock(mutex_);
  if (stopped_) return false;
  steps_[request.value("problem", std::string())] = step;
  Ahead ahead{std::move(request), limits, compile_cache, candidate, step};
  if (thread_.joinable()) {
    pending_ = std::move(ahead);  // the one ahead may be the step's about to be judged
  } else {
    launch(std::move(ahead));
  }
  return true;
}

void Primer::begin_step(const std::string& problem, int step) {
  const std::lock_guard lock(mutex_);
  steps_[problem] = step;
}

int Primer::step_of(const nlohmann::json& request) const {
  const auto found = steps_.find(request.value("problem", std::string()));
  return found == steps_.end() ? 0 : found->second;
}

void Primer::launch(Ahead ahead) {
  text_key_ = candidate_text_key(ahead.candidate);
  compared_ = compared_part(ahead.request);
  guessed_in_ = ahead.guessed_in;
  ahead.request["hold"] = true;
  starting_ = true;
  thread_ = std::thread([this, ahead = std::move(ahead)] {
    const auto started = std::chrono::steady_clock::now();
    try {
      held_ = workers_.call_until_held(ahead.request, ahead.limits, ahead.compile_cache);
    } catch (const std::exception& e) {  // no worker could start: the step is judged afresh
      spdlog::debug("prebuild of {} failed: {}", ahead.candidate.filename().string(), e.what());
    }
    spdlog::debug(
        "prebuild of {}: {} after {:.2f} s", ahead.candidate.filename().string(),
        WorkerPool::is_held(held_) ? "held after its first call" : "ended before its hold",
        seconds_since(started));
    starting_ = false;
  });
}

void Primer::launch_pending() {
  if (!pending_ || stopped_) return;
  Ahead next = std::move(*pending_);
  pending_.reset();
  launch(std::move(next));
}

std::optional<WorkerOutcome> Primer::take(const nlohmann::json& request,
                                          const fs::path& candidate) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return std::nullopt;
  const std::string text_key = candidate_text_key(candidate);
  if (text_key != text_key_ || compared_ != compared_part(request)) {
    if (text_key == text_key_ || request.value("problem", "") != compared_.value("problem", "")) {
      return std::nullopt;  // another problem's, or the same text judged otherwise
    }
    if (step_of(request) > guessed_in_) {  // the step it was guessed for chose another text
      drop_current();
      launch_pending();
    }
    return std::nullopt;  // else an evaluation of the step it was guessed in
  }
  const auto waiting = std::chrono::steady_clock::now();
  thread_.join();
  spdlog::debug("{} waited {:.2f} s for its evaluation ahead", candidate.filename().string(),
                seconds_since(waiting));
  WorkerPool::HeldCall held = std::move(held_);
  text_key_.clear();
  launch_pending();  // beside this evaluation, paused while it times
  lock.unlock();
  if (!held) return std::nullopt;  // its call threw: no worker could start
  const bool was_held = WorkerPool::is_held(held);
  WorkerOutcome outcome = workers_.resume(std::move(held));
  // Ended before its hold without an answer (killed, a worker that did not start, out of time
  // while paused beside other calls): no verdict on the candidate.
  if (!was_held && !outcome.completed) return std::nullopt;
  return outcome;
}

void Primer::drop_current() {
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
  pending_.reset();
  drop_current();
}

void Primer::stop() {
  const std::lock_guard lock(mutex_);
  stopped_ = true;
  pending_.reset();
  workers_.stop_background();
  drop_current();
}

}  // namespace mblast
