// One POST over libcurl, with the timeouts and the response size cap.
#include "llm/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

namespace mblast::llm_detail {

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct BodySink {
  std::string data;
  std::size_t cap = 0;
  bool overflow = false;
};

std::size_t write_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  const std::size_t bytes = size * count;
  if (sink->data.size() + bytes > sink->cap) {
    sink->overflow = true;
    return 0;  // makes libcurl abort the transfer
  }
  sink->data.append(data, bytes);
  return bytes;
}

bool retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

using Easy = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using Headers = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

}  // namespace

std::variant<HttpReply, TransportFailure> http_post(const HttpPost& post,
                                                    const LlmSettings& settings) {
  init_curl_once();
  Easy easy(curl_easy_init(), &curl_easy_cleanup);
  if (!easy) return TransportFailure{false, "libcurl could not create a handle"};
  Headers headers(nullptr, &curl_slist_free_all);
  for (const std::string& header : post.headers) {
    headers.reset(curl_slist_append(headers.release(), header.c_str()));
  }
  // Without this libcurl waits for "100 Continue" before sending larger bodies.
  headers.reset(curl_slist_append(headers.release(), "Expect:"));

  BodySink sink;
  sink.cap = settings.max_response_bytes;
  char error_text[CURL_ERROR_SIZE] = {};
  CURL* h = easy.get();
  curl_easy_setopt(h, CURLOPT_URL, post.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, post.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &write_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(settings.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(settings.total_timeout.count()));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "mblast/" MBLAST_VERSION);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif

  const CURLcode code = curl_easy_perform(h);
  if (sink.overflow) {
    return TransportFailure{
        false, "response larger than " + std::to_string(settings.max_response_bytes) + " bytes"};
  }
  if (code != CURLE_OK) {
    std::string message = error_text[0] != '\0' ? error_text : curl_easy_strerror(code);
    return TransportFailure{retryable(code), message};
  }
  HttpReply reply;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_off_t retry_after = 0;
  if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0) {
    reply.retry_after = std::chrono::seconds(retry_after);
  }
  reply.body = std::move(sink.data);
  return reply;
}

Backoff::Backoff(const LlmSettings& settings)
    : base_(settings.backoff_base),
      max_(settings.backoff_max),
      random_(settings.jitter_seed != 0 ? settings.jitter_seed : std::random_device{}()) {}

std::chrono::milliseconds Backoff::delay(int retry,
                                         std::optional<std::chrono::milliseconds> retry_after) {
  if (retry_after) return std::min(*retry_after, max_);
  const int doublings = std::clamp(retry - 1, 0, 30);
  const double ceiling = std::min(std::ldexp(static_cast<double>(base_.count()), doublings),
                                  static_cast<double>(max_.count()));
  std::uniform_real_distribution<double> jitter(0.0, ceiling);
  return std::chrono::milliseconds(static_cast<std::int64_t>(jitter(random_)));
}

std::string api_error_message(const std::string& body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object()) {
    const nlohmann::json* error = json.contains("error") ? &json["error"] : nullptr;
    if (error != nullptr && error->is_object() && error->contains("message") &&
        (*error)["message"].is_string()) {
      return (*error)["message"].get<std::string>();
    }
    if (error != nullptr && error->is_string()) return error->get<std::string>();
    for (const char* key : {"message", "detail"}) {
      if (json.contains(key) && json[key].is_string()) return json[key].get<std::string>();
    }
  }
  std::string snippet = body.substr(0, 300);
  std::replace_if(
      snippet.begin(), snippet.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return snippet;
}

}  // namespace mblast::llm_detail
