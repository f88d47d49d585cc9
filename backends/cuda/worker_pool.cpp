#include "cuda/worker_pool.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "cuda/compile_cache.hpp"
#include "cuda/worker_sandbox.hpp"
#include "mblast/child.hpp"
#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr auto kExitGrace = std::chrono::seconds(5);  // for a worker that has answered to exit
constexpr std::size_t kStderrTailBytes = 64 * 1024;
constexpr std::size_t kExcerptBytes = 200;
constexpr std::size_t kStarterThreads = 2;            // workers started at the same time, at most
constexpr auto kSlowReady = std::chrono::seconds(1);  // a call that waited longer: start more

std::string ended_early(const ProcessResult& result, bool starting) {
  if (result.term_signal != 0) {
    return std::string(starting ? "worker crashed while starting: " : "worker crashed: ") +
           result.describe();
  }
  return "worker exited (" + result.describe() + ") " +
         (starting ? "before it was ready" : "before answering");
}

std::string seconds_text(std::chrono::duration<double> seconds) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f s", seconds.count());
  return text.data();
}

// A message-safe piece of what the worker sent: printable ASCII only, so that it is valid
// UTF-8 wherever it ends up.
std::string excerpt(std::string_view text) {
  std::string result;
  for (const char c : text.substr(0, kExcerptBytes)) {
    result.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (text.size() > kExcerptBytes) result += "...";
  return result;
}

// The last kStderrTailBytes, not starting inside a UTF-8 sequence.
std::string last_part(const std::string& text) {
  std::size_t from = text.size() > kStderrTailBytes ? text.size() - kStderrTailBytes : 0;
  for (int skipped = 0; skipped < 3 && from < text.size(); ++skipped) {
    if ((static_cast<unsigned char>(text[from]) & 0xC0) != 0x80) break;
    ++from;
  }
  return text.substr(from);
}

std::optional<json> parse_object(const std::string& line, std::string& failure) {
  try {
    json value = json::parse(line);
    if (value.is_object()) return value;
    failure = "expected a JSON object, got " + excerpt(line);
  } catch (const json::parse_error& error) {
    failure = excerpt(line) + " (parse error at byte " + std::to_string(error.byte) + ")";
  }
  return std::nullopt;
}

std::string reason(const json& ready) {
  const json error = ready.value("error", json());
  if (error.is_null()) return "no reason given";
  return error.is_string() ? error.get<std::string>() : error.dump();
}

}  // namespace

struct WorkerPool::Worker {
  Worker(const WorkerConfig& config, const std::string& sandbox, int cache_fd,
         const fs::path& compile_cache_at)
      : dir(config.scratch_root),
        child(worker_spec(config, sandbox, with_compile_cache_folder(dir.path()), cache_fd,
                          compile_cache_at)) {}

  // Declared in this order so that the process group is gone before its directory is removed.
  ScratchDir dir;
  Clock::time_point started = Clock::now();
  Child child;
  std::optional<Clock::time_point> paused_at;
  Clock::duration paused_for{0};  // extends its start deadline

  void pause() {
    if (paused_at) return;
    child.pause();
    paused_at = Clock::now();
  }
  void resume() {
    if (!paused_at) return;
    child.resume();
    paused_for += Clock::now() - *paused_at;
    paused_at.reset();
  }
};

WorkerPool::WorkerPool(WorkerConfig config, std::size_t prestarted)
    : config_(resolved_worker_config(std::move(config))),
      prestarted_(prestarted),
      sandbox_(config_.isolate_network ? detect_sandbox() : "none"),
      cache_fd_(open_problem_cache(config_.problem_cache)),
      compile_cache_at_(shared_compile_cache_at(sandbox_)) {
  want_more();
  for (std::size_t i = 0; i < kStarterThreads; ++i)
    starters_.emplace_back([this] { starter_loop(); });
}

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& starter : starters_) starter.join();
  started_.clear();
  if (cache_fd_ >= 0) ::close(cache_fd_);
}

void WorkerPool::prestart() {
  const std::lock_guard lock(mutex_);
  ++to_start_;
  changed_.notify_all();
}

void WorkerPool::want_more() {
  const std::size_t wanted = waiting_ + prestarted_;
  const std::size_t have = started_.size() + starting_ + to_start_;
  if (have >= wanted) return;
  to_start_ += wanted - have;
  changed_.notify_all();
}

std::unique_ptr<WorkerPool::Worker> WorkerPool::start_worker() const {
  return std::make_unique<Worker>(config_, sandbox_, cache_fd_, compile_cache_at_);
}

void WorkerPool::starter_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || to_start_ > 0; });
    if (stopping_) return;
    --to_start_;
    ++starting_;
    lock.unlock();
    Started next;
    try {
      next.worker = start_worker();
    } catch (...) {
      next.error = std::current_exception();
    }
    lock.lock();
    --starting_;
    if (quiet_ > 0 && next.worker) next.worker->pause();
    started_.push_back(std::move(next));
    changed_.notify_all();
  }
}

void WorkerPool::set_prestarted(std::size_t prestarted) {
  std::lock_guard lock(mutex_);
  prestarted_ = prestarted;
  want_more();
}

void WorkerPool::set_growth_limit(std::size_t most) {
  const std::lock_guard lock(mutex_);
  growth_limit_ = most;
}

std::size_t WorkerPool::prestarted() {
  const std::lock_guard lock(mutex_);
  return prestarted_;
}

void WorkerPool::grow() {
  const std::lock_guard lock(mutex_);
  if (prestarted_ >= growth_limit_) return;
  ++prestarted_;
  spdlog::debug("a call waited for its worker: {} now started ahead", prestarted_);
  want_more();
}

std::unique_ptr<WorkerPool::Worker> WorkerPool::take() {
  std::unique_lock lock(mutex_);
  ++waiting_;
  want_more();
  changed_.wait(lock, [this] { return !started_.empty(); });
  --waiting_;
  Started next = std::move(started_.front());
  started_.pop_front();
  if (next.worker) next.worker->resume();  // taken while another call times its candidate
  want_more();
  lock.unlock();
  if (next.error) std::rethrow_exception(next.error);
  return std::move(next.worker);
}

void WorkerPool::begin_quiet() {
  const std::lock_guard lock(mutex_);
  if (quiet_++ > 0) return;
  for (Started& waiting : started_) {
    if (waiting.worker) waiting.worker->pause();
  }
  for (Worker* worker : background_) worker->pause();
}

void WorkerPool::end_quiet() {
  const std::lock_guard lock(mutex_);
  if (quiet_ == 0 || --quiet_ > 0) return;
  for (Started& waiting : started_) {
    if (waiting.worker) waiting.worker->resume();
  }
  for (Worker* worker : background_) worker->resume();
}

bool WorkerPool::add_background(Worker* worker) {
  const std::lock_guard lock(mutex_);
  if (background_stopped_) return false;
  background_.push_back(worker);
  if (quiet_ > 0) worker->pause();
  return true;
}

void WorkerPool::remove_background(Worker* worker) {
  const std::lock_guard lock(mutex_);
  std::erase(background_, worker);
  worker->resume();  // its finish may have to wait for it to exit
}

void WorkerPool::kill_background() {
  const std::lock_guard lock(mutex_);
  for (Worker* worker : background_) worker->child.kill_group();
}

void WorkerPool::stop_background() {
  {
    const std::lock_guard lock(mutex_);
    background_stopped_ = true;
  }
  kill_background();
}

CallLimits CallLimits::fixed(std::chrono::seconds total) {
  CallLimits limits;
  limits.total = total;
  limits.prepare = limits.compile = limits.base = std::chrono::hours(24 * 365);
  limits.per_eager = 0;
  return limits;
}

namespace {

// The deadline of the phase a request is in, capped by the limits' total and until.
class PhaseClock {
 public:
  PhaseClock(const CallLimits& limits, Clock::time_point sent) : limits_(limits), sent_(sent) {
    start(limits.prepare, "the problem's preparation (" + seconds_text(limits.prepare) + ")");
  }

  void progress(const json& line, WorkerOutcome& outcome) {
    const std::string event = line.value("progress", "");
    if (event == "prepared" || event == "workload") {
      // "workload": a further workload of the request begins; the candidate may compile again
      // for its shapes.
      if (event == "workload") outcome.workload = line.value("index", outcome.workload);
      if (line.contains("eager_ms") && line["eager_ms"].is_number()) {
        outcome.eager_ms = line["eager_ms"].get<double>();
      }
      start(limits_.compile, "the compile allowance (" + seconds_text(limits_.compile) + ")");
    } else if (event == "primed") {
      start_candidate_phase(outcome);
    }
  }

  // From now: the candidate's own allowance, after its first call.
  void start_candidate_phase(const WorkerOutcome& outcome) {
    const double eager_ms = outcome.eager_ms.value_or(0.0);
    const auto allowance = std::chrono::duration_cast<Clock::duration>(
        limits_.base + std::chrono::duration<double, std::milli>(limits_.per_eager * eager_ms));
    std::array<char, 160> why{};
    std::snprintf(why.data(), why.size(), "the candidate's limit (%.0f s + %.0f x eager's %.3g ms)",
                  static_cast<double>(limits_.base.count()), limits_.per_eager, eager_ms);
    phase_deadline_ = Clock::now() + allowance;
    phase_what_ = why.data();
  }

  Clock::time_point deadline() const {
    Clock::time_point deadline = phase_deadline_;
    if (limits_.total.count() > 0) deadline = std::min(deadline, sent_ + limits_.total);
    if (limits_.until) deadline = std::min(deadline, *limits_.until);
    return deadline;
  }

  // Which limit a timeout at `now` hit, in words.
  std::string what(Clock::time_point now) const {
    if (limits_.until && now >= *limits_.until) return "the run's --time-limit";
    if (limits_.total.count() > 0 && now >= sent_ + limits_.total) {
      return "--timeout (" + seconds_text(limits_.total) + ")";
    }
    return phase_what_;
  }

 private:
  void start(std::chrono::seconds allowance, std::string what) {
    phase_deadline_ = Clock::now() + allowance;
    phase_what_ = std::move(what);
  }

  const CallLimits& limits_;
  Clock::time_point sent_;
  Clock::time_point phase_deadline_;
  std::string phase_what_;
};

}  // namespace

struct WorkerPool::Exchange {
  Exchange(WorkerPool& owner, const CallLimits& call_limits, CompileCacheUse cache_use)
      : pool(owner), limits(call_limits), compile_cache(std::move(cache_use)) {}
  Exchange(const Exchange&) = delete;  // the clock refers to `limits`
  Exchange& operator=(const Exchange&) = delete;
  ~Exchange() { end_background(); }  // also where an exception left the exchange

  WorkerPool& pool;
  const CallLimits limits;
  const CompileCacheUse compile_cache;
  std::unique_ptr<Worker> worker;
  WorkerOutcome outcome;
  Clock::time_point sent;
  std::optional<PhaseClock> clock;
  bool written = false;     // the request reached the worker
  bool background = false;  // registered with the pool (paused while another call times)
  bool held = false;        // waiting for resume()
  bool reaped = false;      // its worker's process is gone

  // Unregistered before any finish reaps the worker: the pool must not signal a reaped process.
  void end_background() {
    if (!background) return;
    pool.remove_background(worker.get());
    background = false;
  }
};

ProcessResult WorkerPool::end_worker(Exchange& x, Clock::time_point deadline) {
  x.end_background();
  ProcessResult result = x.worker->child.finish(deadline);
  x.reaped = true;
  if (sandbox_ == "bwrap") unwrap_bwrap_status(result);
  x.outcome.stderr_tail = last_part(x.worker->child.stderr_tail());
  return result;
}

bool WorkerPool::begin(Exchange& x, const json& request, CallKind kind, bool close_stdin) {
  const auto taken = Clock::now();
  x.worker = take();
  x.outcome.sandbox = sandbox_;
  if (kind == CallKind::background) {
    if (!add_background(x.worker.get())) {
      x.outcome.failure = "the pool stopped its background calls";
      return false;
    }
    x.background = true;
  }
  Worker& worker = *x.worker;
  const auto ready_deadline = worker.started + worker.paused_for + config_.start_timeout;
  const std::optional<std::string> ready_line = worker.child.read_line(ready_deadline);
  if (!ready_line) {
    const ProcessResult result = end_worker(x, ready_deadline);
    x.outcome.failure = result.timed_out
                            ? "worker was not ready after " + seconds_text(config_.start_timeout)
                            : ended_early(result, true);
    return false;
  }
  // A worker that never became ready says nothing about how fast workers start.
  if (Clock::now() - taken > kSlowReady) grow();
  std::string why;
  std::optional<json> ready = parse_object(*ready_line, why);
  if (ready) x.outcome.ready = std::move(*ready);
  if (!ready || x.outcome.ready.value("ready", json()) != true) {
    end_worker(x, Clock::now() + kExitGrace);
    x.outcome.failure = ready ? "worker could not start: " + reason(x.outcome.ready)
                              : "worker sent an invalid ready line: " + why;
    return false;
  }

  if (!x.compile_cache.folder.empty() && shares_compile_cache()) {
    x.outcome.compile_cache_in_bytes = copy_missing_files(
        x.compile_cache.folder, worker_compile_cache(worker.dir.path()), kCompileCacheMaxBytes);
  }
  x.sent = Clock::now();
  x.clock.emplace(x.limits, x.sent);
  x.written = worker.child.write(
      request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", x.clock->deadline());
  if (x.written && close_stdin) worker.child.close_stdin();  // one request per worker
  return true;
}

void WorkerPool::run(Exchange& x, bool stop_at_hold) {
  Child& child = x.worker->child;
  bool quiet = false;  // between this worker's "timing" and "timed"
  const auto set_quiet = [&](bool on) {
    if (on == quiet) return;
    quiet = on;
    on ? begin_quiet() : end_quiet();
  };
  struct QuietEnd {
    const std::function<void(bool)> set;
    ~QuietEnd() { set(false); }
  } quiet_end{set_quiet};
  std::optional<json> response;
  bool invalid = false;
  std::string why;
  while (x.written && !response && !invalid) {
    const std::optional<std::string> line = child.read_line(x.clock->deadline());
    if (!line) break;
    std::optional<json> object = parse_object(*line, why);
    if (!object) {
      invalid = true;
    } else if (object->contains("progress") && !object->contains("ok")) {
      x.clock->progress(*object, x.outcome);
      const json& event = (*object)["progress"];
      spdlog::debug("worker {}: {} after {:.2f} s", child.pid(), event.dump(),
                    seconds_since(x.sent));
      if (event == "timing" || event == "timed") set_quiet(event == "timing");
      if (event == "held" && stop_at_hold) {
        x.held = true;
        return;
      }
    } else {
      response = std::move(object);
    }
  }
  x.outcome.seconds = seconds_since(x.sent);
  if (response) {
    x.outcome.completed = true;
    x.outcome.response = std::move(*response);
    end_worker(x, Clock::now() + kExitGrace);
    if (x.compile_cache.keep && !x.compile_cache.folder.empty() && shares_compile_cache()) {
      x.outcome.compile_cache_kept_bytes =
          copy_missing_files(worker_compile_cache(x.worker->dir.path()), x.compile_cache.folder,
                             kCompileCacheMaxBytes);
    }
    return;
  }
  if (invalid) {
    x.outcome.failure = "worker sent invalid JSON: " + why;
    end_worker(x, Clock::now() + kExitGrace);
    return;
  }
  const auto deadline = x.clock->deadline();
  const ProcessResult result = end_worker(x, deadline);
  x.outcome.seconds = seconds_since(x.sent);
  if (result.timed_out) {
    x.outcome.limit = x.clock->what(deadline);
    const bool total = x.limits.total.count() > 0 && deadline >= x.sent + x.limits.total;
    x.outcome.failure = total ? "timed out after " + seconds_text(x.limits.total)
                              : "timed out after " +
                                    seconds_text(std::chrono::duration<double>(x.outcome.seconds)) +
                                    ": " + x.outcome.limit;
  } else {
    x.outcome.failure = ended_early(result, false);
  }
}

WorkerOutcome WorkerPool::call(const json& request, const CallLimits& limits,
                               const CompileCacheUse& compile_cache, CallKind kind) {
  Exchange exchange(*this, limits, compile_cache);
  if (begin(exchange, request, kind, /*close_stdin=*/true)) run(exchange, /*stop_at_hold=*/false);
  return std::move(exchange.outcome);
}

WorkerPool::HeldCall WorkerPool::call_until_held(const json& request, const CallLimits& limits,
                                                 const CompileCacheUse& compile_cache) {
  HeldCall held(new Exchange(*this, limits, compile_cache));
  if (begin(*held, request, CallKind::background, /*close_stdin=*/false)) {
    run(*held, /*stop_at_hold=*/true);
  }
  return held;
}

bool WorkerPool::is_held(const HeldCall& call) { return call && call->held; }

WorkerOutcome WorkerPool::resume(HeldCall call) {
  Exchange& x = *call;
  if (!x.held) return std::move(x.outcome);
  x.held = false;
  x.end_background();     // a judged call from now on (also resumed if it was paused)
  x.sent = Clock::now();  // the limits count from here: the hold was not the candidate's time
  x.clock.emplace(x.limits, x.sent);
  x.clock->start_candidate_phase(x.outcome);
  x.written = x.worker->child.write("go\n", x.clock->deadline());
  if (x.written) x.worker->child.close_stdin();
  run(x, /*stop_at_hold=*/false);
  return std::move(x.outcome);
}

void WorkerPool::EndExchange::operator()(Exchange* exchange) const {
  if (exchange->worker && !exchange->reaped) {
    exchange->end_background();
    exchange->worker->child.kill();
  }
  delete exchange;
}

}  // namespace mblast
