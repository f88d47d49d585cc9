// Template loading (compiled-in or overridden) and rendering.
#include "agents/template.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mblast/agents.hpp"
#include "mblast/embedded.hpp"
#include "mblast/error.hpp"

namespace mblast {

namespace {

bool is_standalone_tag_line(std::string_view line) {
  std::size_t begin = line.find_first_not_of(" \t");
  std::size_t end = line.find_last_not_of(" \t\r");
  if (begin == std::string_view::npos) return false;
  std::string_view body = line.substr(begin, end - begin + 1);
  if (body.size() < 5 || body.substr(0, 2) != "{{" || body.substr(body.size() - 2) != "}}") {
    return false;
  }
  if (body.find("{{", 2) != std::string_view::npos) return false;
  char sigil = body[2];
  return sigil == '#' || sigil == '^' || sigil == '/' || sigil == '!';
}

// Marks the start of every template line while rendering, so that no line is ever blank to
// kainjow; it is removed afterwards.
constexpr char kLineMark = '\x01';

// Standalone section and comment lines vanish (mustache spec). kainjow drops them only when
// the section renders, and also drops blank lines next to a rendered section; so standalone
// lines are removed here and kainjow's line logic is disabled with kLineMark.
std::string prepare(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    std::size_t next = eol == std::string::npos ? text.size() : eol + 1;
    std::string_view line(text.data() + pos, (eol == std::string::npos ? text.size() : eol) - pos);
    if (is_standalone_tag_line(line)) {
      std::size_t begin = line.find_first_not_of(" \t");
      std::size_t end = line.find_last_not_of(" \t\r");
      out.append(line.substr(begin, end - begin + 1));
    } else {
      out += kLineMark;
      out.append(text, pos, next - pos);
    }
    pos = next;
  }
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    throw input_error("cannot read prompt template " + path.string(),
                      "fix the file or unset MBLAST_PROMPTS_DIR");
  }
  return text.str();
}

}  // namespace

std::string load_prompt(std::string_view name) {
  const std::string file = std::string(name) + ".md";
  if (const char* dir = std::getenv("MBLAST_PROMPTS_DIR"); dir && *dir) {
    std::filesystem::path path = std::filesystem::path(dir) / file;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) {
      spdlog::debug("prompt {} from {}", name, path.string());
      return read_file(path);
    }
  }
  for (const auto& embedded : embedded::prompts::files()) {
    if (embedded.path == file) return std::string(embedded.contents);
  }
  throw input_error("no prompt template named " + file);
}

namespace agents {

std::string render_template(std::string_view name, const std::string& text,
                            const TemplateData& data) {
  kainjow::mustache::mustache compiled(prepare(text));
  compiled.set_custom_escape([](const std::string& value) { return value; });
  if (!compiled.is_valid()) {
    throw input_error("prompt template " + std::string(name) + ": " + compiled.error_message(),
                      "fix the template in MBLAST_PROMPTS_DIR or unset it");
  }
  std::string rendered = compiled.render(data);
  if (!compiled.is_valid()) {
    throw input_error("prompt template " + std::string(name) + ": " + compiled.error_message());
  }
  std::erase(rendered, kLineMark);
  return rendered;
}

std::string render_prompt(std::string_view name, const TemplateData& data) {
  return render_template(name, load_prompt(name), data);
}

}  // namespace agents
}  // namespace mblast
