#include "cuda/eval_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <spdlog/spdlog.h>

#include "cuda/cuda_eval.hpp"
#include "cuda/primer.hpp"
#include "cuda/worker_pool.hpp"
#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "mblast/support.hpp"

extern char** environ;

namespace mblast {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kStartWait = std::chrono::seconds(20);
constexpr int kRequestReadMs = 30'000;
constexpr int kStaleCheckMs = 2'000;

std::string env_or(const char* name, const char* fallback = "") {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

// A count of workers from the environment: at least 1.
std::size_t env_count(const char* name, const char* fallback) {
  return static_cast<std::size_t>(
      std::max(1L, std::strtol(env_or(name, fallback).c_str(), nullptr, 10)));
}

fs::path self_exe() { return fs::read_symlink("/proc/self/exe"); }

// $XDG_RUNTIME_DIR/mblast, else /tmp/mblast-UID: created 0700, and used only if it is ours and
// nobody else may enter it.
std::optional<fs::path> private_dir() {
  const std::string xdg = env_or("XDG_RUNTIME_DIR");
  const fs::path dir = !xdg.empty() && fs::is_directory(xdg)
                           ? fs::path(xdg) / "mblast"
                           : fs::temp_directory_path() / ("mblast-" + std::to_string(::getuid()));
  ::mkdir(dir.c_str(), 0700);
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid() ||
      (info.st_mode & 077) != 0) {
    spdlog::warn("not using an eval server: {} is not a private folder of this user", dir.string());
    return std::nullopt;
  }
  return dir;
}

// Sizes and modification times of the Python files under `dir`: a worker folder given by
// MBLAST_WORKER_DIR can change under the same path (the embedded one is named by its content).
std::string files_stamp(const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> rows;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().extension() != ".py" && it->path().extension() != ".json") continue;
    std::error_code size_ec;
    rows.push_back(fs::relative(it->path(), dir, size_ec).string() + ":" +
                   std::to_string(it->file_size(size_ec)) + ":" +
                   std::to_string(it->last_write_time(size_ec).time_since_epoch().count()));
  }
  std::sort(rows.begin(), rows.end());
  std::string all;
  for (const auto& row : rows) all += row + "\n";
  return sha256_hex(all).substr(0, 16);
}

// Everything a server's workers depend on: a server answers only requests that agree on it.
std::string identity(const EvalOptions& options, const fs::path& python) {
  std::error_code ec;
  const fs::path exe = self_exe();
  json id = {{"exe", exe.string()},
             {"exe_size", fs::file_size(exe, ec)},
             {"exe_mtime", fs::last_write_time(exe, ec).time_since_epoch().count()},
             {"python", python.string()},
             {"worker", worker_directory().string()},
             {"worker_files", files_stamp(worker_directory())},
             {"device", options.device},
             {"cache", fs::absolute(options.cache_dir).string()}};
  for (const char* name :
       {"MBLAST_SANDBOX", "CUDA_VISIBLE_DEVICES", "MBLAST_REFERENCE_CACHE_MAX_MB", "PATH",
        "LD_LIBRARY_PATH", "PYTHONPATH", "MBLAST_NVCC", "MBLAST_CUDA_ARCH"}) {
    id["env"][name] = env_or(name);
  }
  return id.dump();
}

// The size and modification time of the executable an identity names, now: a server whose binary
// was rebuilt or replaced by another exits rather than idle on with the old code.
std::string binary_stamp(const std::string& id) {
  std::error_code ec;
  const json parsed = json::parse(id, nullptr, false);
  const fs::path exe = parsed.is_object() ? parsed.value("exe", std::string()) : std::string();
  const auto size = fs::file_size(exe, ec);
  if (ec) return "missing";
  const auto mtime = fs::last_write_time(exe, ec).time_since_epoch().count();
  return std::to_string(size) + "/" + std::to_string(mtime);
}

fs::path socket_for(const fs::path& dir, const std::string& id) {
  return dir / ("eval-" + sha256_hex(id).substr(0, 16) + ".sock");
}

int connect_to(const fs::path& socket) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.string().size() >= sizeof address.sun_path) return -1;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// One line (without its newline); nullopt on EOF, error or, with timeout_ms >= 0, a timeout.
std::optional<std::string> read_line(int fd, int timeout_ms) {
  std::string line;
  char buffer[65536];
  while (true) {
    if (timeout_ms >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    line.append(buffer, static_cast<std::size_t>(n));
    if (const auto end = line.find('\n'); end != std::string::npos) return line.substr(0, end);
  }
}

// Starts `mblast internal eval-server` detached (its own session, reparented to init), with the
// secrets taken out of its environment and its output in a log file beside the socket.
void start_server(const fs::path& socket, const fs::path& python, const std::string& id) {
  const std::string exe = self_exe().string();
  const std::string log = socket.string() + ".log";
  std::vector<std::string> args = {
      exe,        "internal",      "eval-server", "--socket", socket.string(),
      "--python", python.string(), "--identity",  id};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text = *entry;
    if (!is_secret_env_name(text.substr(0, text.find('=')))) env_text.push_back(text);
  }
  std::vector<char*> envp;
  for (auto& entry : env_text) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    const int null = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null >= 0) ::dup2(null, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::optional<json> ask(const fs::path& socket, const std::string& request) {
  const int fd = connect_to(socket);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> line;
  if (write_all(fd, request + "\n")) line = read_line(fd, -1);
  ::close(fd);
  if (!line) return std::nullopt;
  try {
    return json::parse(*line);
  } catch (const json::parse_error&) {
    return std::nullopt;
  }
}

// nullopt: the server serves another configuration (a stale server must never fail a command:
// it is judged in this process instead).
std::optional<std::vector<json>> answer(const json& response) {
  if (response.value("identity_mismatch", false)) {
    spdlog::debug("the eval server serves another configuration; judging in this process");
    return std::nullopt;
  }
  if (response.contains("error")) {
    const auto& e = response["error"];
    throw Error(static_cast<ExitCode>(e.value("code", 1)),
                e.value("message", "the eval server failed"), e.value("hint", ""));
  }
  return response.value("results", json::array()).get<std::vector<json>>();
}

// What a client sends the server of `id`: the options and the candidates, by absolute path.
json server_request(const EvalOptions& options, const std::string& id,
                    const std::vector<fs::path>& candidates) {
  json request = {
      {"options", eval_options_to_json(options)}, {"identity", id}, {"candidates", json::array()}};
  for (const auto& c : candidates) request["candidates"].push_back(fs::absolute(c).string());
  return request;
}

std::string line_of(const json& request) {
  return request.dump(-1, ' ', false, json::error_handler_t::replace);
}

// One request about the evaluation ahead ("ahead": what) to the running server; no server up:
// nothing is sent and none is started.
std::optional<json> ask_about_ahead(const EvalOptions& options, const fs::path& python,
                                    const std::vector<fs::path>& candidates, const char* what,
                                    int step) {
  const auto dir = private_dir();
  if (!dir) return std::nullopt;
  const std::string id = identity(options, python);
  json request = server_request(options, id, candidates);
  request["ahead"] = what;
  request["step"] = step;
  return ask(socket_for(*dir, id), line_of(request));
}

}  // namespace

bool eval_server_wanted(const EvalOptions& options) {
  const std::string setting = env_or("MBLAST_EVAL_SERVER");
  if (setting == "0") return false;
  if (setting == "1") return options.backend == "cuda";
  return options.backend == "cuda" && is_cuda_device(options.device);
}

std::optional<std::vector<json>> evaluate_via_server(const EvalOptions& options,
                                                     const std::vector<fs::path>& candidates,
                                                     const fs::path& python) {
  const auto dir = private_dir();
  if (!dir) return std::nullopt;
  const std::string id = identity(options, python);
  const fs::path socket = socket_for(*dir, id);
  const std::string text = line_of(server_request(options, id, candidates));
  if (auto response = ask(socket, text)) return answer(*response);
  start_server(socket, python, id);
  const auto until = Clock::now() + kStartWait;
  while (Clock::now() < until) {
    if (const int fd = connect_to(socket); fd >= 0) {
      ::close(fd);
      if (auto response = ask(socket, text)) return answer(*response);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  spdlog::warn("the eval server did not answer (log: {}.log); judging in this process",
               socket.string());
  return std::nullopt;
}

bool evaluate_ahead_via_server(const EvalOptions& options, const fs::path& candidate,
                               const fs::path& python, bool cancel, int step) {
  const auto response =
      ask_about_ahead(options, python, {candidate}, cancel ? "cancel" : "start", step);
  return response && response->value("ahead", false);
}

void begin_step_via_server(const EvalOptions& options, const fs::path& python, int step) {
  ask_about_ahead(options, python, {}, "step", step);
}

namespace {

// Listens on `socket` (replacing a stale file of a server gone); -1 with the reason logged.
int listen_on(const fs::path& socket) {
  ::unlink(socket.c_str());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 16) != 0) {
    spdlog::error("eval server: cannot listen on {}: {}", socket.string(), std::strerror(errno));
    if (listener >= 0) ::close(listener);
    return -1;
  }
  return listener;
}

// What one server keeps between requests: its workers, the evaluation ahead, the count served.
class ServerState {
 public:
  explicit ServerState(fs::path python)
      : python_(std::move(python)),
        prestart_(env_count("MBLAST_EVAL_SERVER_PRESTART", "2")),
        growth_limit_(env_count("MBLAST_EVAL_SERVER_PRESTART_MAX", "4")) {}

  int served() const { return served_; }

  json answer(const json& request) {
    EvalOptions options = eval_options_from_json(request.at("options"));
    std::vector<fs::path> candidates;
    for (const auto& c : request.at("candidates")) candidates.emplace_back(c.get<std::string>());
    start_pool(options);
    const std::string ahead = request.value("ahead", std::string());
    if (ahead == "start") {
      // Answered at once: the evaluation ahead runs beside the requests that follow, paused
      // while they time their candidates (the same pool), until one of them takes it over.
      if (!candidates.empty()) options.candidate = candidates[0];
      return {{"ahead", !candidates.empty() &&
                            evaluate_ahead(options, *pool_, *primer_, request.value("step", 0))}};
    }
    if (ahead == "cancel") {
      primer_->cancel();
      return {{"ahead", false}};
    }
    if (ahead == "step") {
      primer_->begin_step(fs::absolute(options.problem).string(), request.value("step", 0));
      return {{"ahead", false}};
    }
    auto results =
        evaluate_all(options, candidates, *pool_, /*keep_prestarted=*/true, primer_.get());
    ++served_;
    for (auto& r : results) r["eval_server"] = {{"pid", ::getpid()}, {"request", served_}};
    return {{"results", results}};
  }

 private:
  // Two started ahead: a worker's start (PyTorch's import, CUDA) can take longer than a whole
  // evaluation, and a run of `mblast eval` commands should never wait for one.
  void start_pool(const EvalOptions& options) {
    if (pool_) return;
    pool_ = std::make_unique<WorkerPool>(eval_worker_config(options, python_), prestart_);
    // The steps of a run can come faster than workers start (10-16 s on the H200): five of 20
    // steps of call 41 waited 4.8-11 s for one. Bursts raise how many are kept ahead.
    pool_->set_growth_limit(std::max(prestart_, growth_limit_));
    primer_ = std::make_unique<Primer>(*pool_);
  }

  fs::path python_;
  std::size_t prestart_;
  std::size_t growth_limit_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<Primer> primer_;  // destroyed first: it kills its worker ahead, of the pool
  int served_ = 0;
};

json error_response(int code, const std::string& message, const std::string& hint) {
  return {{"error", {{"code", code}, {"message", message}, {"hint", hint}}}};
}

// Reads one request from `client` and writes its answer there.
void serve_client(int client, const std::string& id, ServerState& state) {
  json response;
  try {
    const auto line = read_line(client, kRequestReadMs);
    if (!line) throw input_error("the eval server got no request");
    const json request = json::parse(*line);
    // Compared as sent, never recomputed here: once its executable is replaced on disk, even by
    // an identical copy, this process would read another identity from /proc/self/exe.
    response = request.value("identity", std::string()) == id ? state.answer(request)
                                                              : json{{"identity_mismatch", true}};
  } catch (const Error& e) {
    response = error_response(static_cast<int>(e.code()), e.what(), e.hint());
  } catch (const std::exception& e) {
    response = error_response(1, std::string("eval server: ") + e.what(), "");
  }
  write_all(client, response.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace

int run_eval_server(const fs::path& socket, const fs::path& python, const std::string& id) {
  const std::string lock_path = socket.string() + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) return 0;  // another server serves it
  const int listener = listen_on(socket);
  if (listener < 0) return 1;
  std::signal(SIGPIPE, SIG_IGN);
  const long idle_s = std::strtol(env_or("MBLAST_EVAL_SERVER_IDLE_S", "900").c_str(), nullptr, 10);
  spdlog::info("eval server {} listening on {} (idle limit {} s)", ::getpid(), socket.string(),
               idle_s);
  ServerState state(python);
  const std::string served_binary = binary_stamp(id);
  auto last_request = Clock::now();
  while (true) {
    pollfd p{listener, POLLIN, 0};
    const int ready = ::poll(&p, 1, kStaleCheckMs);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      if (binary_stamp(id) != served_binary) {
        spdlog::info("eval server {}: its executable changed on disk; exiting", ::getpid());
        break;
      }
      if (Clock::now() - last_request >= std::chrono::seconds(std::max(1L, idle_s))) break;
      continue;
    }
    last_request = Clock::now();
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    serve_client(client, id, state);
    ::close(client);
  }
  spdlog::info("eval server {} exits after {} requests ({} s idle)", ::getpid(), state.served(),
               idle_s);
  ::unlink(socket.c_str());
  ::close(listener);
  return 0;
}

json eval_options_to_json(const EvalOptions& o) {
  JudgeOptions judge = o;
  judge.cache_dir = fs::absolute(o.cache_dir);
  json j = judge_options_to_json(judge);
  j["problem"] = fs::absolute(o.problem).string();
  j["workloads"] = json::array();
  for (const auto& w : o.workloads) j["workloads"].push_back(fs::absolute(w).string());
  j["timing"] = o.timing;
  j["compile_baseline"] = o.compile_baseline;
  j["profile"] = o.profile;
  j["profile_reference"] = o.profile_reference;
  j["keep_compile_cache"] = o.keep_compile_cache;
  if (o.until) {
    // The run's deadline as wall-clock time: a steady clock's epoch is private to each process,
    // and a request may wait for the server while another client's evaluation runs.
    const auto left = *o.until - Clock::now();
    j["deadline_unix_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                                (std::chrono::system_clock::now() + left).time_since_epoch())
                                .count();
  }
  return j;
}

EvalOptions eval_options_from_json(const json& j) {
  EvalOptions o;
  read_judge_options(j, o);
  o.problem = j.at("problem").get<std::string>();
  for (const auto& w : j.value("workloads", json::array()))
    o.workloads.emplace_back(w.get<std::string>());
  o.timing = j.value("timing", o.timing);
  o.compile_baseline = j.value("compile_baseline", o.compile_baseline);
  o.profile = j.value("profile", o.profile);
  o.profile_reference = j.value("profile_reference", o.profile_reference);
  o.keep_compile_cache = j.value("keep_compile_cache", o.keep_compile_cache);
  if (const auto deadline = j.find("deadline_unix_ms"); deadline != j.end()) {
    const auto at = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(deadline->get<std::int64_t>()));
    o.until = Clock::now() +
              std::chrono::duration_cast<Clock::duration>(at - std::chrono::system_clock::now());
  }
  return o;
}

}  // namespace mblast
