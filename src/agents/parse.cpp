// Reading models' answers: fenced code blocks and JSON objects.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "mblast/agents.hpp"

namespace mblast {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return text;
}

std::string unquote(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

struct Fence {
  char ch = 0;
  std::size_t length = 0;
  std::string info;
};

// A fence line: up to three spaces, then three or more backticks or tildes.
bool parse_fence(std::string_view line, Fence& fence) {
  std::size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos || indent > 3) return false;
  char ch = line[indent];
  if (ch != '`' && ch != '~') return false;
  std::size_t end = line.find_first_not_of(ch, indent);
  if (end == std::string_view::npos) end = line.size();
  if (end - indent < 3) return false;
  fence.ch = ch;
  fence.length = end - indent;
  std::string_view info = line.substr(end);
  std::size_t a = info.find_first_not_of(" \t");
  std::size_t b = info.find_last_not_of(" \t\r");
  fence.info = a == std::string_view::npos ? "" : std::string(info.substr(a, b - a + 1));
  return true;
}

// "python file=model_new.py" -> language python, file model_new.py; a bare second word that
// looks like a file name counts as the file too ("```python model_new.py").
void parse_info(const std::string& info, CodeBlock& block) {
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos < info.size()) {
    std::size_t start = info.find_first_not_of(" \t", pos);
    if (start == std::string::npos) break;
    std::size_t end = info.find_first_of(" \t", start);
    if (end == std::string::npos) end = info.size();
    words.push_back(info.substr(start, end - start));
    pos = end;
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    std::size_t eq = word.find('=');
    if (eq != std::string::npos) {
      std::string key = lower(word.substr(0, eq));
      if (key == "file" || key == "filename" || key == "path" || key == "name") {
        block.file = unquote(word.substr(eq + 1));
      }
    } else if (i == 0) {
      block.language = lower(word);
    } else if (block.file.empty() && word.find('.') != std::string::npos) {
      block.file = unquote(word);
    }
  }
  if (block.language.find('{') != std::string::npos) block.language.clear();
}

bool is_closing(std::string_view line, const Fence& open) {
  Fence fence;
  return parse_fence(line, fence) && fence.ch == open.ch && fence.length >= open.length &&
         fence.info.empty();
}

std::string block_label(const CodeBlock& block) {
  std::string label = block.language.empty() ? "text" : block.language;
  if (!block.file.empty()) label += " file=" + block.file;
  if (!block.closed) label += " (unterminated)";
  return label;
}

std::string describe_blocks(const std::vector<CodeBlock>& blocks) {
  if (blocks.empty()) return "got no code blocks";
  std::string labels;
  for (const auto& block : blocks) {
    if (!labels.empty()) labels += ", ";
    labels += block_label(block);
  }
  return fmt::format("got {} block{}: {}", blocks.size(), blocks.size() == 1 ? "" : "s", labels);
}

bool defines_model_new(const std::string& code) {
  return code.find("class ModelNew") != std::string::npos ||
         code.find("ModelNew =") != std::string::npos;
}

bool language_matches(const std::string& have, const std::string& want) {
  if (have == want) return true;
  if (want == "python") return have == "py" || have == "python3";
  if (want == "opencl") return have == "cl" || have == "c";
  if (want == "c") return have == "cpp" || have == "c++";
  return false;
}

ResponseError truncated_error(const LlmResponse& response, const std::string& wanted) {
  return ResponseError(
      fmt::format("the model's answer was cut off by the length limit ({} output tokens, finish "
                  "reason '{}') before {} was complete",
                  response.output_tokens, response.finish_reason, wanted),
      true);
}

// The end of the balanced object starting at text[start] == '{', or npos.
std::size_t balanced_end(std::string_view text, std::size_t start) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = start; i < text.size(); ++i) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{') {
      ++depth;
    } else if (ch == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

std::optional<nlohmann::json> first_object(std::string_view text) {
  for (std::size_t start = text.find('{'); start != std::string_view::npos;
       start = text.find('{', start + 1)) {
    std::size_t end = balanced_end(text, start);
    if (end == std::string_view::npos) continue;
    auto parsed = nlohmann::json::parse(text.substr(start, end - start + 1), nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) return parsed;
  }
  return std::nullopt;
}

}  // namespace

std::vector<CodeBlock> extract_code_blocks(std::string_view text) {
  std::vector<CodeBlock> blocks;
  std::optional<Fence> open;
  CodeBlock current;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    std::size_t next = eol == std::string_view::npos ? text.size() : eol + 1;
    std::string_view line = text.substr(pos, next - pos);
    std::string_view bare = line.substr(0, line.size() - (line.ends_with('\n') ? 1 : 0));
    if (open) {
      if (is_closing(bare, *open)) {
        blocks.push_back(std::move(current));
        current = CodeBlock{};
        open.reset();
      } else {
        current.code.append(line);
      }
    } else {
      Fence fence;
      if (parse_fence(bare, fence) &&
          (fence.ch == '~' || fence.info.find('`') == std::string::npos)) {
        open = fence;
        parse_info(fence.info, current);
      }
    }
    pos = next;
  }
  if (open) {
    current.closed = false;
    blocks.push_back(std::move(current));
  }
  for (auto& block : blocks) {
    if (block.code.ends_with("\r\n"))
      block.code.resize(block.code.size() - 2);
    else if (block.code.ends_with('\n'))
      block.code.pop_back();
  }
  return blocks;
}

CodeBlock pick_code_block(const LlmResponse& response, const std::string& file,
                          const std::string& language) {
  const std::string wanted = "the ```" + language + " file=" + file + " block";
  if (response.truncated) throw truncated_error(response, wanted);
  auto blocks = extract_code_blocks(response.text);
  const CodeBlock* chosen = nullptr;
  for (const auto& block : blocks) {
    if (block.closed && block.file == file) chosen = &block;
  }
  if (!chosen) {
    const bool python = language == "python";
    for (const auto& block : blocks) {
      if (!block.closed || (!block.file.empty() && block.file != file)) continue;
      // An unlabelled block counts only when it clearly is the candidate.
      bool fits = language_matches(block.language, language) ||
                  (block.language.empty() && python && defines_model_new(block.code));
      if (fits && (!python || defines_model_new(block.code))) chosen = &block;
    }
  }
  if (chosen) return *chosen;
  bool has_language = std::any_of(blocks.begin(), blocks.end(), [&](const CodeBlock& block) {
    return block.closed && language_matches(block.language, language);
  });
  if (has_language && language == "python") {
    throw ResponseError(fmt::format("the model's answer has no ```python block that defines "
                                    "ModelNew ({})",
                                    describe_blocks(blocks)),
                        false);
  }
  throw ResponseError(
      fmt::format("the model's answer has no ```{} block ({})", language, describe_blocks(blocks)),
      false);
}

nlohmann::json extract_json_object(const LlmResponse& response) {
  if (response.truncated) throw truncated_error(response, "the JSON object");
  for (const auto& block : extract_code_blocks(response.text)) {
    if (block.closed && (block.language == "json" || block.language.empty())) {
      if (auto found = first_object(block.code)) return *found;
    }
  }
  if (auto found = first_object(response.text)) return *found;
  std::string head = response.text.substr(0, 200);
  throw ResponseError(
      fmt::format("the model's answer has no JSON object (it begins: \"{}\")", head), false);
}

}  // namespace mblast
