#pragma once
// Requests to the Python worker (worker), one request per process: a crash, hang or
// CUDA error in candidate code takes down only that process. Protocol: the worker, started as
// `PYTHON -m mblast_worker serve`, writes one JSON "ready" line on stdout, reads one JSON request
// line on stdin, writes one JSON response line and exits (a held eval, call_until_held, waits
// for a second line, "go", after its candidate's first call).
//
// Each worker runs in its own fresh temporary directory (cwd, TMPDIR and HOME), removed after the
// call, without secrets in its environment, and without network where the OS allows it (bwrap,
// else `unshare -n`; `sandbox` says which). Under bwrap the whole file system is read-only to it
// except that directory (and a private /dev/shm), and the problem cache is hidden: the worker gets
// it as an open directory descriptor (fd 3, MBLAST_CACHE_FD), which it closes before it imports
// candidate code, so candidate code can neither read stored references nor forge cache entries.
//
// Threading: one background thread per pool forks every worker, so call() never waits for a
// fork. Its only shared state is the queue of started workers, guarded by one mutex. A worker
// taken from the queue belongs to the one call() that took it, which reads its ready line (the
// worker has been importing in the meantime), sends the request and waits. call() may run on
// several threads at once; the destructor must not run concurrently with call().
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/process.hpp"

namespace mblast {

struct WorkerConfig {
  std::filesystem::path python;
  std::filesystem::path worker_dir;    // holds the mblast_worker package; becomes PYTHONPATH
  std::string device = "cpu";          // MBLAST_DEVICE: cpu, cuda or cuda:N
  std::filesystem::path scratch_root;  // per-worker temp dirs go here; empty: the system's
  // The problem cache (float64 references, problem facts): passed as a descriptor, hidden from
  // the sandbox's file system. Empty: none.
  std::filesystem::path problem_cache;
  std::vector<std::filesystem::path> hidden;  // further folders the sandbox hides (emptied)
  std::map<std::string, std::string> env;     // applied last, over everything else
  std::chrono::seconds start_timeout{180};    // from the start of a worker to its ready line
  // 0: no limit. CUDA reserves a huge virtual address space, so leave 0 for cuda.
  std::size_t address_space_bytes = 0;
  unsigned open_files = 4096;
  bool isolate_network = true;
};

// How long a worker may take for one request. The worker reports its progress on the way
// ({"progress": "prepared", "eager_ms": ...} once the problem side is ready, {"progress": "primed"}
// after the candidate's first call), and each phase has its own allowance, so that a candidate's
// limit follows from its reference: a minute plus a multiple of eager's time, after a separate
// allowance for compilation. `total` and `until` cap everything.
struct CallLimits {
  std::chrono::seconds total{0};  // from sending the request to its answer; 0: no cap
  std::optional<std::chrono::steady_clock::time_point> until;  // e.g. the run's --time-limit
  std::chrono::seconds prepare{600};  // until "prepared": the problem's references and facts
  std::chrono::seconds compile{300};  // "prepared" to "primed": import, JIT builds, first call
  std::chrono::seconds base{60};      // "primed" to the answer: base + per_eager x eager's time
  double per_eager = 1000;
  // Only `total`, for requests without candidate phases (ceilings) and the tests.
  static CallLimits fixed(std::chrono::seconds total);
};

struct WorkerOutcome {
  bool completed = false;  // a response line was read and parsed
  nlohmann::json response;
  // Empty if completed, else e.g. "worker crashed: killed by SIGSEGV (signal 11)", "timed out
  // after 300.0 s", "worker exited (exit 1) before answering", "worker sent invalid JSON: ...".
  std::string failure;
  std::string stderr_tail;         // the worker's last stderr output, candidate prints included
  double seconds = 0;              // from sending the request to the answer or the failure
  nlohmann::json ready;            // the worker's ready line
  std::string limit;               // on a timeout: which limit it was, in words
  std::optional<double> eager_ms;  // as the worker reported it when prepared
  // The request's workload being judged when it ended, from the "workload" progress: 0 for the
  // problem, i for its i-th further workload (a request with "workloads").
  int workload = 0;
  std::string sandbox;                          // "bwrap", "unshare" or "none"
  std::uintmax_t compile_cache_in_bytes = 0;    // copied into the worker's caches before
  std::uintmax_t compile_cache_kept_bytes = 0;  // copied back to the shared folder after
};

// A call's share of the problem's compile cache (compile_cache.hpp): `folder` is copied into the
// worker's scratch before the request; with `keep` (a trusted candidate), what the worker added
// is copied back after its answer. An empty folder, or a pool that does not share compile caches
// (shares_compile_cache): the worker's caches start empty.
struct CompileCacheUse {
  std::filesystem::path folder;
  bool keep = false;
};

// A judged call times its candidate; a background call (a prebuild's evaluation ahead, up to its
// candidate's first call) is paused whenever another call times one, like the workers starting.
enum class CallKind { judged, background };

class WorkerPool {
 public:
  // Checks that config.python exists (mblast::Error otherwise) and starts `prestarted`
  // workers in the background; after every call() that many are started or ready again.
  explicit WorkerPool(WorkerConfig config, std::size_t prestarted = 1);
  ~WorkerPool();  // kills the workers that were never used and removes their directories
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Takes a started worker (waiting for one if none is left), has a replacement started, sends
  // the request and waits at most `timeout` for the answer. A failing worker is an outcome;
  // throws mblast::Error only when no worker process can be started at all.
  WorkerOutcome call(const nlohmann::json& request, const CallLimits& limits,
                     const CompileCacheUse& compile_cache = {}, CallKind kind = CallKind::judged);
  // Kills the workers of the background calls in flight: their calls return failures.
  void kill_background();
  // The same, and refuses new ones: before the pool is destroyed, while such a call may still
  // run on another thread.
  void stop_background();
  WorkerOutcome call(const nlohmann::json& request, std::chrono::seconds timeout) {
    return call(request, CallLimits::fixed(timeout));
  }

  // One request's exchange with its worker; a held one waits in the middle (call_until_held).
  struct Exchange;
  struct EndExchange {
    void operator()(Exchange* exchange) const;  // kills a worker still running, then reaps it
  };
  using HeldCall = std::unique_ptr<Exchange, EndExchange>;
  // A request that asks its worker to hold (an eval with "hold": the driver's prebuild) as a
  // background call, until the worker reports "held" after the candidate's first call, or the
  // call ends before that (a failing candidate, a timeout, kill_background). The held worker
  // waits for resume(); dropping the HeldCall kills it.
  HeldCall call_until_held(const nlohmann::json& request, const CallLimits& limits,
                           const CompileCacheUse& compile_cache = {});
  static bool is_held(const HeldCall& call);
  // Lets a held worker go on ("go" on its stdin) as a judged call, its candidate's time limit
  // counted from now; the outcome of a call that ended before its hold is returned as it was.
  // `call` must not be empty.
  WorkerOutcome resume(HeldCall call);

  // Starts one more worker in the background, beyond the `prestarted` ones.
  void prestart();
  // Changes how many workers are kept started ahead; 0 before the last call, so that no worker
  // is started only to be killed unused.
  void set_prestarted(std::size_t prestarted);
  // Lets the number started ahead grow by one, up to `most`, each time a call finds its worker
  // still starting (a burst of calls outran the starts); 0, the default: it never grows.
  void set_growth_limit(std::size_t most);
  std::size_t prestarted();

  const std::string& sandbox() const { return sandbox_; }
  // True when candidate code sees a read-only file system (bwrap); false under `unshare -n` or
  // no sandbox, where it can write wherever the user can.
  bool read_only_filesystem() const { return sandbox_ == "bwrap"; }
  // True where workers start from a copy of the problem's compile cache (compile_cache.hpp): under
  // bwrap, which shows every worker its copy at one path.
  bool shares_compile_cache() const { return !compile_cache_at_.empty(); }

 private:
  struct Worker;
  struct Started {
    std::unique_ptr<Worker> worker;
    std::exception_ptr error;  // why it could not be started
  };

  std::unique_ptr<Worker> take();
  // The phases of an exchange: a worker taken, ready and sent the request (false: it ended
  // there); its lines read until the answer, or until "held" with stop_at_hold; its worker reaped.
  bool begin(Exchange& exchange, const nlohmann::json& request, CallKind kind, bool close_stdin);
  void run(Exchange& exchange, bool stop_at_hold);
  ProcessResult end_worker(Exchange& exchange, std::chrono::steady_clock::time_point deadline);
  void want_more();  // with mutex_ held
  void grow();       // one more started ahead, within growth_limit_
  // A call's worker times its candidate between its "timing" and "timed" progress lines: the
  // workers starting meanwhile (importing PyTorch, creating a CUDA context) are paused, so that
  // they do not slow the host-bound forwards being timed. Counted, for concurrent calls.
  void begin_quiet();
  void end_quiet();
  // A background call's worker, paused while quiet_; false once stop_background was called.
  bool add_background(Worker* worker);
  void remove_background(Worker* worker);
  void starter_loop();
  std::unique_ptr<Worker> start_worker() const;

  const WorkerConfig config_;
  std::size_t prestarted_;        // guarded by mutex_
  std::size_t growth_limit_ = 0;  // guarded by mutex_
  std::string sandbox_;
  int cache_fd_ = -1;  // config_.problem_cache, open for the pool's lifetime
  // Where workers see their compile caches; empty: they do not share them.
  std::filesystem::path compile_cache_at_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Started> started_;
  std::size_t to_start_ = 0;         // requests the starter threads have not served yet
  std::size_t starting_ = 0;         // workers the starter threads are starting right now
  std::size_t waiting_ = 0;          // calls waiting in take()
  std::size_t quiet_ = 0;            // calls in their timing phase
  std::vector<Worker*> background_;  // the workers of background calls in flight
  bool background_stopped_ = false;
  bool stopping_ = false;
  // Last: they start running once everything above is set up. More than one, because a worker
  // takes longer to start (10-15 s on the H200: PyTorch, a CUDA context, torch.compile's stack)
  // than a step of the loop takes to use one.
  std::vector<std::thread> starters_;
};

}  // namespace mblast
