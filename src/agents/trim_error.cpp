// Cutting compiler logs and tracebacks down to what a model needs to fix the code.
#include <fmt/format.h>

#include <cctype>
#include <regex>
#include <set>
#include <vector>

#include "mblast/agents.hpp"

namespace mblast {

namespace {

// Later errors are mostly consequences of the first ones.
constexpr std::size_t kMaxErrors = 10;
// Traceback frames kept at the start and at the end of a long Python traceback.
constexpr std::size_t kHeadFrames = 1;
constexpr std::size_t kTailFrames = 3;

enum class Severity { free, error, warning, note };

struct Block {
  Severity severity = Severity::free;
  std::string key;  // the message without its location, for de-duplication
  std::vector<std::string> lines;
  std::size_t chars() const {
    std::size_t n = 0;
    for (const auto& line : lines) n += line.size() + 1;
    return n;
  }
};

struct Counts {
  std::size_t errors = 0, warnings = 0, backtrace = 0, frames = 0;
};

std::string strip_ansi(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
      continue;
    }
    if (line[i] != '\r') out += line[i];
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    lines.push_back(strip_ansi(text.substr(pos, eol - pos)));
    pos = eol + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// nvcc: file(12): error: ...   gcc/clang: file:12:5: error: ...   ptxas/nvlink: ptxas error : ...
bool diagnostic(const std::string& line, Severity& severity, std::string& key) {
  static const std::regex nvcc(
      R"(^(.*)\((\d+)\): (catastrophic error|internal error|error|warning|remark)( #[\w-]+)?: (.*)$)");
  static const std::regex gcc(
      R"(^(.*):(\d+):(\d+:)? (fatal error|error|warning|note|remark): (.*)$)");
  static const std::regex tool(
      R"(^(ptxas|nvlink|nvcc|ld|fatbinary) ?(fatal|error|warning)\s*: (.*)$)");
  // Long lines are never headers worth a regex; this also bounds std::regex's recursion.
  const std::string head = line.substr(0, 600);
  std::smatch m;
  std::string kind;
  if (std::regex_match(head, m, nvcc)) {
    kind = m[3];
    key = m[5];
  } else if (std::regex_match(head, m, gcc)) {
    kind = m[4];
    key = m[5];
  } else if (std::regex_match(head, m, tool)) {
    kind = m[2];
    key = m[3];
  } else {
    return false;
  }
  if (kind == "note") {
    severity = Severity::note;
  } else if (kind == "warning" || kind == "remark") {
    severity = Severity::warning;
  } else {
    severity = Severity::error;
  }
  return true;
}

bool is_backtrace(const std::string& line) {
  static const std::regex pattern(
      R"(^\s*(detected during|instantiation of ".*" at line \d+|\[ \d+ instantiation contexts not shown \]|In file included from |from .*:\d+[,:]$)|: In instantiation of |:\d+:\d+:\s+required (from|by) )");
  return std::regex_search(line.substr(0, 600), pattern);
}

bool is_noise(const std::string& line) {
  return line.rfind("Remark: The warnings can be suppressed", 0) == 0;
}

// Keeps the first and the last frames of each long Python traceback.
std::vector<std::string> compress_tracebacks(const std::vector<std::string>& lines,
                                             Counts& counts) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out.push_back(lines[i]);
    if (lines[i].rfind("Traceback (most recent call last):", 0) != 0) continue;
    std::vector<std::vector<std::string>> frames;
    std::size_t j = i + 1;
    while (j < lines.size() && lines[j].rfind("  ", 0) == 0) {
      if (lines[j].rfind("  File ", 0) == 0 || frames.empty()) frames.emplace_back();
      frames.back().push_back(lines[j]);
      ++j;
    }
    for (std::size_t f = 0; f < frames.size(); ++f) {
      bool keep = f < kHeadFrames || f + kTailFrames >= frames.size();
      if (keep) {
        out.insert(out.end(), frames[f].begin(), frames[f].end());
      } else if (f == kHeadFrames) {
        std::size_t dropped = frames.size() - kHeadFrames - kTailFrames;
        counts.frames += dropped;
        out.push_back(fmt::format("  [... {} frames omitted]", dropped));
      }
    }
    i = j - 1;
  }
  return out;
}

std::vector<Block> group(const std::vector<std::string>& lines, Counts& counts) {
  std::vector<Block> blocks;
  bool in_diagnostic = false;
  for (const auto& line : lines) {
    Severity severity;
    std::string key;
    if (is_noise(line)) continue;
    if (diagnostic(line, severity, key)) {
      blocks.push_back(Block{severity, key, {line}});
      in_diagnostic = true;
    } else if (is_backtrace(line)) {
      ++counts.backtrace;
    } else if (line.find_first_not_of(" \t") == std::string::npos) {
      in_diagnostic = false;
      if (!blocks.empty() && !blocks.back().lines.empty() && !blocks.back().lines.back().empty()) {
        blocks.back().lines.push_back("");
      }
    } else if (in_diagnostic) {
      blocks.back().lines.push_back(line);
    } else {
      if (blocks.empty() || blocks.back().severity != Severity::free) blocks.push_back(Block{});
      blocks.back().lines.push_back(line);
    }
  }
  return blocks;
}

std::string assemble(const std::vector<Block>& blocks) {
  std::string out;
  for (const auto& block : blocks) {
    for (const auto& line : block.lines) out += line + "\n";
  }
  while (out.ends_with("\n")) out.pop_back();
  return out;
}

std::size_t total_chars(const std::vector<Block>& blocks) {
  std::size_t n = 0;
  for (const auto& block : blocks) n += block.chars();
  return n;
}

std::string summary(const Counts& c) {
  std::vector<std::string> parts;
  if (c.errors) parts.push_back(fmt::format("{} more error{}", c.errors, c.errors == 1 ? "" : "s"));
  if (c.warnings) {
    parts.push_back(fmt::format("{} warning{}", c.warnings, c.warnings == 1 ? "" : "s"));
  }
  if (c.backtrace) parts.push_back(fmt::format("{} template backtrace lines", c.backtrace));
  if (c.frames) parts.push_back(fmt::format("{} traceback frames", c.frames));
  if (parts.empty()) return {};
  std::string text = "[trimmed by mblast: ";
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
  return text + " omitted]";
}

// One huge block (a very long message): keep its beginning and its end.
std::string cut_middle(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  const std::string marker =
      fmt::format("\n[... {} characters omitted ...]\n", text.size() - max_chars);
  std::size_t room = max_chars > marker.size() ? max_chars - marker.size() : 0;
  std::size_t head = room * 2 / 3;
  return text.substr(0, head) + marker + text.substr(text.size() - (room - head));
}

}  // namespace

std::string trim_error(const std::string& error_text, std::size_t max_chars) {
  Counts counts;
  auto blocks = group(compress_tracebacks(split_lines(error_text), counts), counts);

  std::set<std::string> seen_warnings;
  std::size_t errors = 0;
  bool dropped_previous = false;
  std::vector<Block> kept;
  for (auto& block : blocks) {
    bool drop = false;
    if (block.severity == Severity::warning && !seen_warnings.insert(block.key).second) {
      ++counts.warnings;
      drop = true;
    } else if (block.severity == Severity::error && ++errors > kMaxErrors) {
      ++counts.errors;
      drop = true;
    } else if (block.severity == Severity::note) {
      drop = dropped_previous;  // a note belongs to the diagnostic before it
    }
    if (block.severity != Severity::note) dropped_previous = drop;
    if (!drop) kept.push_back(std::move(block));
  }

  const std::size_t reserve = 160;
  const std::size_t budget = max_chars > reserve ? max_chars - reserve : max_chars;
  // Over budget: warnings go first, then errors from the last one backwards, keeping the first.
  for (std::size_t i = kept.size(); i-- > 0 && total_chars(kept) > budget;) {
    if (kept[i].severity == Severity::warning) {
      ++counts.warnings;
      kept.erase(kept.begin() + static_cast<long>(i));
    }
  }
  std::size_t first_error = kept.size();
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i].severity == Severity::error) {
      first_error = i;
      break;
    }
  }
  for (std::size_t i = kept.size(); i-- > first_error + 1 && total_chars(kept) > budget;) {
    if (kept[i].severity == Severity::free) continue;
    if (kept[i].severity == Severity::error) ++counts.errors;
    kept.erase(kept.begin() + static_cast<long>(i));
  }

  std::string text = cut_middle(assemble(kept), budget);
  std::string note = summary(counts);
  if (!note.empty()) text += (text.empty() ? "" : "\n") + note;
  return text.size() <= max_chars ? text : cut_middle(text, max_chars);
}

}  // namespace mblast
