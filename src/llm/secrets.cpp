#include <unistd.h>

#include <string_view>

#include "mblast/llm.hpp"
#include "mblast/process.hpp"

namespace mblast {

std::string redact_secrets(std::string text) {
  // Very short values would blank out ordinary words; no real key is that short.
  constexpr std::size_t kMinSecretLength = 6;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    const std::size_t eq = variable.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view value = variable.substr(eq + 1);
    if (value.size() < kMinSecretLength) continue;
    if (!is_secret_env_name(std::string(variable.substr(0, eq)))) continue;
    for (std::size_t at = text.find(value); at != std::string::npos;
         at = text.find(value, at + 3)) {
      text.replace(at, value.size(), "***");
    }
  }
  return text;
}

}  // namespace mblast
