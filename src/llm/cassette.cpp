// Cassettes: recorded exchanges, replayed by request content so that runs reproduce offline.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

#include "llm/common.hpp"
#include "mblast/kb.hpp"

namespace mblast {

nlohmann::json canonical_request(const LlmRequest& request) {
  nlohmann::json messages = nlohmann::json::array();
  for (const LlmMessage& message : request.messages) {
    messages.push_back({{"role", message.role}, {"content", message.content}});
  }
  return {{"role_tag", request.role_tag},
          {"messages", messages},
          {"max_tokens", request.max_tokens},
          {"temperature", request.temperature},
          {"seed", request.seed ? nlohmann::json(*request.seed) : nlohmann::json()}};
}

// nlohmann::json keeps object keys sorted, so dump() is canonical.
std::string cassette_key(const LlmRequest& request) {
  return sha256_hex(canonical_request(request).dump());
}

namespace llm_detail {

namespace {

LlmRequest request_from_json(const nlohmann::json& json) {
  LlmRequest request;
  request.role_tag = json.value("role_tag", request.role_tag);
  for (const nlohmann::json& message : json.value("messages", nlohmann::json::array())) {
    request.messages.push_back(
        {message.at("role").get<std::string>(), message.at("content").get<std::string>()});
  }
  request.max_tokens = json.value("max_tokens", request.max_tokens);
  request.temperature = json.value("temperature", request.temperature);
  if (json.contains("seed") && !json["seed"].is_null()) {
    request.seed = json["seed"].get<std::uint64_t>();
  }
  return request;
}

LlmResponse response_from_json(const nlohmann::json& json) {
  LlmResponse response;
  response.text = json.at("text").get<std::string>();
  response.input_tokens = json.value("input_tokens", std::int64_t{0});
  response.output_tokens = json.value("output_tokens", std::int64_t{0});
  response.tokens_estimated = json.value("tokens_estimated", false);
  response.finish_reason = json.value("finish_reason", "stop");
  response.truncated = response.finish_reason == "length";
  // The recorded provider and model, so that prices and budgets act as in the original run.
  response.provider = json.value("provider", "replay");
  response.model = json.value("model", "");
  return response;
}

std::string last_user_message(const LlmRequest& request) {
  for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
    if (it->role == "user") return it->content;
  }
  return "";
}

// An authored answer for the first unused request of `role_tag` whose messages contain every
// string of `contains` (all requests of the role when it is empty).
struct Matcher {
  std::string role_tag;
  std::vector<std::string> contains;
  LlmResponse response;
  bool used = false;

  bool matches(const LlmRequest& request) const {
    if (!role_tag.empty() && request.role_tag != role_tag) return false;
    for (const auto& needle : contains) {
      const bool found = std::any_of(request.messages.begin(), request.messages.end(),
                                     [&](const LlmMessage& message) {
                                       return message.content.find(needle) != std::string::npos;
                                     });
      if (!found) return false;
    }
    return true;
  }
};

Matcher matcher_from_json(const nlohmann::json& match, LlmResponse response) {
  Matcher matcher;
  matcher.role_tag = match.value("role_tag", "");
  const auto contains = match.value("contains", nlohmann::json::array());
  if (contains.is_string()) {
    matcher.contains.push_back(contains.get<std::string>());
  } else {
    matcher.contains = contains.get<std::vector<std::string>>();
  }
  matcher.response = std::move(response);
  return matcher;
}

class ReplayClient final : public LlmClient {
 public:
  explicit ReplayClient(std::filesystem::path path) : path_(std::move(path)) {
    std::ifstream in(path_);
    if (!in) {
      throw llm_input_error("cannot read the cassette " + path_.string(),
                            "check the path after replay:; record one with --llm-record FILE");
    }
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        const nlohmann::json exchange = nlohmann::json::parse(line);
        if (exchange.contains("match")) {
          matchers_.push_back(
              matcher_from_json(exchange.at("match"), response_from_json(exchange.at("response"))));
          continue;
        }
        // An authored exchange may leave out the key; it follows from the request.
        const std::string key = exchange.contains("request")
                                    ? cassette_key(request_from_json(exchange["request"]))
                                    : exchange.at("key").get<std::string>();
        exchanges_[key].push_back(response_from_json(exchange.at("response")));
      } catch (const nlohmann::json::exception& e) {
        throw llm_input_error(
            "cassette " + path_.string() + " line " + std::to_string(number) +
                " is not a valid exchange: " + e.what(),
            "each line is {\"request\": {...}, \"response\": {\"text\": ...}}, or "
            "{\"match\": {\"role_tag\": ..., \"contains\": [...]}, "
            "\"response\": {...}} for an authored answer");
      }
    }
  }

  LlmResponse complete(const LlmRequest& request) override {
    const std::string key = cassette_key(request);
    std::lock_guard lock(mutex_);
    const auto found = exchanges_.find(key);
    std::size_t& used = used_[key];
    if (found != exchanges_.end() && used < found->second.size()) return found->second[used++];
    // Prompts carry measured times, so authored answers match by role and content instead.
    for (Matcher& matcher : matchers_) {
      if (!matcher.used && matcher.matches(request)) {
        matcher.used = true;
        return matcher.response;
      }
    }
    {
      const std::string held =
          found == exchanges_.end()
              ? "has no answer for"
              : "has only " + std::to_string(found->second.size()) + " answer(s), all used, for";
      throw llm_job_error(
          "replay:" + path_.string() + " " + held + " the " + request.role_tag +
              " request whose last user message begins: \"" +
              clip(last_user_message(request), 200) + "\"",
          "record this run with a live provider (--llm PROVIDER:MODEL --llm-record FILE), or "
          "add the exchange to the cassette with \"note\": \"authored\"");
    }
  }

  std::string name() const override { return "replay:" + path_.string(); }

 private:
  std::filesystem::path path_;
  std::map<std::string, std::vector<LlmResponse>> exchanges_;  // key -> answers in file order
  std::map<std::string, std::size_t> used_;
  std::vector<Matcher> matchers_;  // authored answers in file order, each used once
  std::mutex mutex_;
};

class RecordingClient final : public LlmClient {
 public:
  RecordingClient(std::unique_ptr<LlmClient> inner, std::filesystem::path path)
      : inner_(std::move(inner)), path_(std::move(path)) {
    std::error_code ec;
    if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      throw llm_input_error(
          "cannot write the cassette " + path_.string() + ": " + std::strerror(errno),
          "check the --llm-record path");
    }
  }
  ~RecordingClient() override { ::close(fd_); }
  RecordingClient(const RecordingClient&) = delete;
  RecordingClient& operator=(const RecordingClient&) = delete;

  LlmResponse complete(const LlmRequest& request) override {
    LlmResponse response = inner_->complete(request);
    const nlohmann::json exchange = {{"key", cassette_key(request)},
                                     {"request", canonical_request(request)},
                                     {"response",
                                      {{"text", response.text},
                                       {"input_tokens", response.input_tokens},
                                       {"output_tokens", response.output_tokens},
                                       {"tokens_estimated", response.tokens_estimated},
                                       {"finish_reason", response.finish_reason},
                                       {"provider", response.provider},
                                       {"model", response.model}}},
                                     {"note", "recorded"}};
    // Prompts and answers never hold a key, but a stray one must not reach the file either.
    append(redact_secrets(exchange.dump()) + "\n");
    return response;
  }

  std::string name() const override { return inner_->name(); }

 private:
  void append(const std::string& line) {
    std::lock_guard lock(mutex_);
    for (std::size_t written = 0; written < line.size();) {
      const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw llm_job_error("cannot append to the cassette " + path_.string() + ": " +
                            std::strerror(errno));
      }
      written += static_cast<std::size_t>(n);
    }
  }

  std::unique_ptr<LlmClient> inner_;
  std::filesystem::path path_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<LlmClient> make_replay_client(const std::filesystem::path& cassette) {
  return std::make_unique<ReplayClient>(cassette);
}

}  // namespace llm_detail

std::unique_ptr<LlmClient> make_recording_client(std::unique_ptr<LlmClient> inner,
                                                 const std::filesystem::path& cassette) {
  return std::make_unique<llm_detail::RecordingClient>(std::move(inner), cassette);
}

}  // namespace mblast
