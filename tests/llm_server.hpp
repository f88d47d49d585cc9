#pragma once
// Test helpers for the LLM layer: a local HTTP server on 127.0.0.1 (ephemeral port) that speaks
// both wire formats (POST /v1/chat/completions and POST /v1/messages) with scripted replies, an
// environment override that restores itself, and a capture of spdlog output.
//
// Header-only on purpose: tests/CMakeLists.txt compiles *_test.cpp and test_support.cpp only. The
// server is plain POSIX sockets because Debian's cpp-httplib is a compiled library needing its own
// link flags; HTTP/1.1 with Content-Length and "Connection: close" is all the clients here use.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/llm.hpp"

#include "test_support.hpp"

namespace mblast::testing {

// Settings for tests: short waits, reproducible jitter.
inline LlmSettings fast_llm_settings() {
  LlmSettings settings;
  settings.connect_timeout = std::chrono::seconds(2);
  settings.total_timeout = std::chrono::seconds(10);
  settings.backoff_base = std::chrono::milliseconds(10);
  settings.backoff_max = std::chrono::seconds(5);
  settings.jitter_seed = 7;
  return settings;
}

inline LlmRequest hello_request(const std::string& role = "actor",
                                const std::string& user = "Reply with the single word: pong") {
  LlmRequest request;
  request.role_tag = role;
  request.messages = {{"system", "You are a health check."}, {"user", user}};
  request.max_tokens = 64;
  return request;
}

struct SeenRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};
};

inline ScriptedReply openai_answer(const std::string& text, const std::string& finish = "stop",
                                   int input_tokens = 21, int output_tokens = 1) {
  const nlohmann::json body = {{"id", "chatcmpl-test"},
                               {"object", "chat.completion"},
                               {"model", "test-model"},
                               {"choices",
                                {{{"index", 0},
                                  {"message", {{"role", "assistant"}, {"content", text}}},
                                  {"finish_reason", finish}}}},
                               {"usage",
                                {{"prompt_tokens", input_tokens},
                                 {"completion_tokens", output_tokens},
                                 {"total_tokens", input_tokens + output_tokens}}}};
  return {200, body.dump(), {}, {}};
}

inline ScriptedReply anthropic_answer(const std::string& text, const std::string& stop = "end_turn",
                                      int input_tokens = 19, int output_tokens = 2) {
  const nlohmann::json body = {
      {"id", "msg_test"},
      {"type", "message"},
      {"role", "assistant"},
      {"model", "test-model"},
      {"content", {{{"type", "text"}, {"text", text}}}},
      {"stop_reason", stop},
      {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  return {200, body.dump(), {}, {}};
}

// An error body both APIs would send: {"type": "error", "error": {"type", "message"}}.
inline ScriptedReply error_reply(int status, const std::string& message,
                                 const std::string& retry_after = "") {
  const nlohmann::json body = {{"type", "error"},
                               {"error", {{"type", "test_error"}, {"message", message}}}};
  ScriptedReply reply{status, body.dump(), {}, {}};
  if (!retry_after.empty()) reply.headers.emplace_back("Retry-After", retry_after);
  return reply;
}

class LlmTestServer {
 public:
  LlmTestServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
    const int yes = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listen_fd_, 64) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    socklen_t length = sizeof address;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~LlmTestServer() { stop(); }
  LlmTestServer(const LlmTestServer&) = delete;
  LlmTestServer& operator=(const LlmTestServer&) = delete;

  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    accept_thread_.join();
    std::vector<std::thread> connections;
    {
      std::lock_guard lock(mutex_);
      connections.swap(connections_);
    }
    for (std::thread& connection : connections) connection.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string openai_base() const { return url() + "/v1"; }
  std::string anthropic_base() const { return url(); }

  // The next requests get these replies, in order; after them, the default answer.
  void script(std::vector<ScriptedReply> replies) {
    std::lock_guard lock(mutex_);
    script_.assign(replies.begin(), replies.end());
  }

  // With keys set, the default answer is 401 unless the request carries them.
  void expect_keys(std::string openai_key, std::string anthropic_key) {
    std::lock_guard lock(mutex_);
    openai_key_ = std::move(openai_key);
    anthropic_key_ = std::move(anthropic_key);
  }

  void set_answer(std::string text) {
    std::lock_guard lock(mutex_);
    answer_ = std::move(text);
  }

  std::vector<SeenRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void accept_loop() {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
      pollfd waiting{listen_fd_, POLLIN, 0};
      if (::poll(&waiting, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  static bool read_some(int fd, std::string& buffer) {
    pollfd readable{fd, POLLIN, 0};
    if (::poll(&readable, 1, 5000) <= 0) return false;
    char chunk[65536];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  static void send_all(int fd, const std::string& data) {
    for (std::size_t sent = 0; sent < data.size();) {
      const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  static std::optional<SeenRequest> read_request(int fd) {
    std::string buffer;
    std::size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!read_some(fd, buffer)) return std::nullopt;
    }
    SeenRequest request;
    std::istringstream head(buffer.substr(0, header_end));
    std::string line;
    std::getline(head, line);
    std::istringstream request_line(line);
    request_line >> request.method >> request.path;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const std::size_t value_start = line.find_first_not_of(' ', colon + 1);
      request.headers[name] = value_start == std::string::npos ? "" : line.substr(value_start);
    }
    if (request.header("expect") == "100-continue") send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    const std::size_t length = std::strtoull(request.header("content-length").c_str(), nullptr, 10);
    request.body = buffer.substr(header_end + 4);
    while (request.body.size() < length) {
      if (!read_some(fd, request.body)) return std::nullopt;
    }
    return request;
  }

  ScriptedReply default_reply(const SeenRequest& request) const {
    const nlohmann::json body = request.json();
    if (request.path == "/v1/chat/completions") {
      if (!openai_key_.empty() && request.header("authorization") != "Bearer " + openai_key_) {
        return error_reply(401, "Incorrect API key provided");
      }
      if (!body.is_object() || !body.contains("messages")) return error_reply(400, "bad body");
      return openai_answer(answer_);
    }
    if (request.path == "/v1/messages") {
      if (!anthropic_key_.empty() && request.header("x-api-key") != anthropic_key_) {
        return error_reply(401, "invalid x-api-key");
      }
      if (request.header("anthropic-version") != "2023-06-01") {
        return error_reply(400, "anthropic-version header is missing or wrong");
      }
      if (!body.is_object() || !body.contains("max_tokens")) {
        return error_reply(400, "max_tokens: field required");
      }
      return anthropic_answer(answer_);
    }
    return error_reply(404, "no route " + request.path);
  }

  static std::string status_text(int status) {
    switch (status) {
      case 200:
        return "OK";
      case 400:
        return "Bad Request";
      case 401:
        return "Unauthorized";
      case 403:
        return "Forbidden";
      case 404:
        return "Not Found";
      case 429:
        return "Too Many Requests";
      case 500:
        return "Internal Server Error";
      case 503:
        return "Service Unavailable";
      default:
        return "Status";
    }
  }

  void serve(int fd) {
    const std::optional<SeenRequest> request = read_request(fd);
    if (!request) {
      ::close(fd);
      return;
    }
    ScriptedReply reply;
    {
      std::unique_lock lock(mutex_);
      requests_.push_back(*request);
      if (!script_.empty()) {
        reply = script_.front();
        script_.pop_front();
      } else {
        reply = default_reply(*request);
      }
      if (wake_.wait_for(lock, reply.delay, [this] { return stopping_; })) {
        ::close(fd);
        return;
      }
    }
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                       status_text(reply.status) + "\r\nContent-Type: application/json\r\n" +
                       "Content-Length: " + std::to_string(reply.body.size()) +
                       "\r\nConnection: close\r\n";
    for (const auto& [name, value] : reply.headers) head += name + ": " + value + "\r\n";
    send_all(fd, head + "\r\n" + reply.body);
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::thread> connections_;
  std::deque<ScriptedReply> script_;
  std::vector<SeenRequest> requests_;
  std::string openai_key_;
  std::string anthropic_key_;
  std::string answer_ = "pong";
};

// Routes spdlog's default logger into a string for the lifetime of the object.
class LogCapture {
 public:
  LogCapture()
      : previous_(spdlog::default_logger()),
        logger_(std::make_shared<spdlog::logger>(
            "", std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_))) {
    logger_->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger_);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() {
    logger_->flush();
    return stream_.str();
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace mblast::testing
