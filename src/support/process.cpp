#include "mblast/process.hpp"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "mblast/child.hpp"
#include "support/spawn.hpp"

namespace mblast {

bool is_secret_env_name(const std::string& name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return upper.ends_with("_API_KEY") || upper.ends_with("_TOKEN") ||
         upper.find("SECRET") != std::string::npos || upper.find("PASSWORD") != std::string::npos;
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  return detail::search_path(name, path != nullptr ? std::string_view(path) : detail::kDefaultPath);
}

std::string ProcessResult::describe() const {
  if (timed_out) {
    std::array<char, 64> text{};
    std::snprintf(text.data(), text.size(), "timed out after %.1f s", timeout_seconds);
    return text.data();
  }
  if (term_signal != 0) {
    const std::string number = std::to_string(term_signal);
    const char* abbrev = ::sigabbrev_np(term_signal);
    if (abbrev == nullptr) return "killed by signal " + number;
    return std::string("killed by SIG") + abbrev + " (signal " + number + ")";
  }
  return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const ProcessSpec& spec) {
  const auto start = detail::Clock::now();
  Child child(spec, Child::StderrKeep::head);
  const Child::Deadline deadline =
      spec.timeout.count() > 0 ? start + spec.timeout : Child::Deadline::max();
  if (!spec.stdin_data.empty()) child.write(spec.stdin_data, deadline);
  ProcessResult result = child.finish(deadline);
  if (result.timed_out)
    result.timeout_seconds = std::chrono::duration<double>(spec.timeout).count();
  return result;
}

}  // namespace mblast
