#include "cuda/primer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "cuda/compile_cache.hpp"
#include "cuda/cuda_eval.hpp"

namespace mblast {

namespace fs = std::filesystem;

bool prime_candidate(const EvalOptions& options, const fs::path& candidate, WorkerPool& workers) {
  if (!workers.shares_compile_cache()) return false;
  const fs::path cache_dir = resolved_cache_dir(options);
  const nlohmann::json request = worker_prime_request(options, candidate, cache_dir);
  const CompileCacheUse compile_cache{problem_compile_cache(cache_dir, options.problem), true};
  const auto started = std::chrono::steady_clock::now();
  const WorkerOutcome outcome =
      workers.call(request, call_limits(options), compile_cache, CallKind::background);
  const bool primed = outcome.completed && outcome.response.value("primed", false);
  spdlog::debug("prebuild of {}: {} after {:.2f} s, {} bytes kept", candidate.filename().string(),
                primed ? "primed" : "not primed (" + outcome.failure + ")",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                outcome.compile_cache_kept_bytes);
  return primed;
}

bool Primer::start(const EvalOptions& options, const fs::path& candidate) {
  const std::lock_guard lock(mutex_);
  if (stopped_ || busy_.exchange(true)) return false;
  if (thread_.joinable()) thread_.join();  // the last prime, finished
  text_key_ = candidate_text_key(candidate);
  thread_ = std::thread([this, options, candidate] {
    try {
      prime_candidate(options, candidate, workers_);
    } catch (const std::exception& e) {
      spdlog::debug("prebuild of {} failed: {}", candidate.filename().string(), e.what());
    }
    busy_ = false;
  });
  return true;
}

void Primer::await(const fs::path& candidate) {
  const std::lock_guard lock(mutex_);
  if (!busy_ || !thread_.joinable() || text_key_ != candidate_text_key(candidate)) return;
  const auto started = std::chrono::steady_clock::now();
  thread_.join();
  spdlog::debug("{} waited {:.2f} s for its prebuild", candidate.filename().string(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void Primer::stop() {
  const std::lock_guard lock(mutex_);
  stopped_ = true;
  workers_.stop_background();
  if (thread_.joinable()) thread_.join();
}

}  // namespace mblast
