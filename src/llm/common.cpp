#include "llm/common.hpp"

#include <cstdlib>

namespace mblast::llm_detail {

Error llm_input_error(const std::string& what, const std::string& hint) {
  return input_error(redact_secrets(what), redact_secrets(hint));
}

Error llm_job_error(const std::string& what, const std::string& hint) {
  return job_error(redact_secrets(what), redact_secrets(hint));
}

std::int64_t estimate_tokens(std::size_t bytes) {
  return static_cast<std::int64_t>((bytes + 3) / 4);
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string clip(const std::string& text, std::size_t limit) {
  return text.size() <= limit ? text : text.substr(0, limit) + "...";
}

}  // namespace mblast::llm_detail
