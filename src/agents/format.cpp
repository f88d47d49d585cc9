// Formatting helpers for the prompt renderers.
#include "agents/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "mblast/error.hpp"

namespace mblast::agents {

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return "?";
  return std::fabs(ms) >= 1e4 ? fmt::format("{:.0f}", ms) : fmt::format("{:.4g}", ms);
}

std::string format_speedup(double ratio) {
  return std::isfinite(ratio) ? fmt::format("{:.2f}x", ratio) : "?";
}

std::string format_number(double value) { return fmt::format("{:.4g}", value); }

std::string format_optional_ms(const std::optional<double>& ms) {
  return ms ? format_ms(*ms) : "?";
}

std::string excerpt(const std::string& text, std::size_t max_lines, std::size_t max_chars) {
  std::size_t pos = 0;
  std::size_t lines = 0;
  while (pos < text.size() && lines < max_lines) {
    std::size_t eol = text.find('\n', pos);
    std::size_t next = eol == std::string::npos ? text.size() : eol + 1;
    if (next > max_chars) break;
    pos = next;
    ++lines;
  }
  if (pos >= text.size()) return text;
  std::size_t rest = static_cast<std::size_t>(
                         std::count(text.begin() + static_cast<long>(pos), text.end(), '\n')) +
                     (text.back() == '\n' ? 0 : 1);
  std::string out = text.substr(0, pos);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + fmt::format("[... {} more lines not shown]", rest);
}

std::string first_line(const std::string& text, std::size_t max_chars) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      line.erase(0, line.find_first_not_of(" \t"));
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.size() > max_chars) line = line.substr(0, max_chars) + "...";
      return line;
    }
    pos = eol + 1;
  }
  return {};
}

std::string block_text(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string short_id(const std::string& id) { return id.substr(0, 12); }

void add_common_fields(TemplateData& data, const AgentFormat& spec, const std::string& backend,
                       const std::string& hardware, const PrecisionPolicy& precision,
                       const std::vector<std::string>& heavy_ops) {
  if (spec.outputs.empty()) {
    throw input_error("no candidate format for the " + backend + " backend",
                      "set the context's format from the backend's traits (mblast/backend.hpp)");
  }
  data.set("backend", backend);
  data.set("backend_title", spec.title);
  data.set("hardware", hardware.empty() ? std::string("the target device") : hardware);
  data.set("custom_kernels", spec.custom_kernels);
  data.set("python_candidate", spec.python_candidate);
  data.set("atol", format_number(precision.atol));
  data.set("rtol", format_number(precision.rtol));
  data.set("allow_tf32", precision.allow_tf32);
  data.set("allow_bf16", precision.allow_bf16);
  data.set("has_heavy_ops", !heavy_ops.empty());
  data.set("heavy_ops", heavy_ops.empty() ? std::string() : "`" + join(heavy_ops, "`, `") + "`");

  std::vector<std::string> headers;
  TemplateList outputs;
  for (const auto& output : spec.outputs) {
    headers.push_back("```" + output.language + " file=" + output.file);
    TemplateData item;
    item.set("file", output.file);
    item.set("language", output.language);
    item.set("header", headers.back());
    outputs.push_back(item);
  }
  data.set("outputs", outputs);
  data.set("single_output", spec.outputs.size() == 1);
  data.set("main_file", spec.outputs.front().file);
  data.set("main_language", spec.outputs.front().language);
  data.set("main_header", headers.front());
  const std::string& main_file = spec.outputs.front().file;
  data.set("current_fence", "```" + spec.outputs.front().language + " file=current_best" +
                                main_file.substr(main_file.rfind('.')));
  data.set("backend_rules", block_text(render_prompt(spec.rules_prompt, data)));
}

std::vector<LlmMessage> with_system(std::string user_text) {
  return {LlmMessage{"system", render_prompt("system", TemplateData{})},
          LlmMessage{"user", std::move(user_text)}};
}

}  // namespace mblast::agents
