#include "mblast/probe.hpp"

#include <utility>

#include "mblast/error.hpp"

namespace mblast::probing {

namespace fs = std::filesystem;
using std::chrono::seconds;

DoctorCheck make_check(const char* name, bool required) {
  DoctorCheck check;
  check.name = name;
  check.required_for_cpu_backends = required;
  return check;
}

DoctorCheck& pass(DoctorCheck& check, std::string detail) {
  check.ok = true;
  check.detail = std::move(detail);
  check.fix.clear();
  return check;
}

DoctorCheck& fail(DoctorCheck& check, std::string detail, std::string fix) {
  check.ok = false;
  check.detail = std::move(detail);
  check.fix = std::move(fix);
  return check;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = trim(std::string_view(text).substr(begin, end - begin));
    if (!line.empty()) lines.push_back(std::move(line));
    begin = end + 1;
  }
  return lines;
}

// The word after `marker` in `text` (e.g. the version after "release "), or empty.
std::string word_after(const std::string& text, std::string_view marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + marker.size();
  const std::size_t end = text.find_first_of(" ,\n", begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Runs a probe; a program that cannot start is reported like a failed run.
ProcessResult probe(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout;
  spec.max_output_bytes = 64 * 1024;
  try {
    return run_process(spec);
  } catch (const Error& error) {
    ProcessResult result;
    result.err = error.what();
    return result;
  }
}

// "exit 1: <the most telling line of its output>", short enough for one line of doctor output.
std::string failure_text(const ProcessResult& result, bool last_line) {
  std::vector<std::string> lines = lines_of(result.err);
  if (lines.empty()) lines = lines_of(result.out);
  std::string text = result.exit_code == -1 && !result.timed_out && result.term_signal == 0
                         ? ""
                         : result.describe();
  if (!lines.empty()) {
    std::string line = last_line ? lines.back() : lines.front();
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    text += (text.empty() ? "" : ": ") + line;
  }
  return text;
}

std::optional<fs::path> find_tool(const std::string& name, const std::string& fallback_dir) {
  if (auto found = find_program(name)) return found;
  return find_program(fallback_dir + "/" + name);
}

}  // namespace mblast::probing
