#pragma once
// Number and text formatting shared by the prompt renderers, and the per-backend output format.
#include <cstddef>
#include <optional>
#include <string>

#include <vector>
#include "mblast/agent_format.hpp"

#include "agents/template.hpp"
#include "mblast/agents.hpp"

namespace mblast::agents {

std::string format_ms(double ms);                                 // "0.4123", "12.35", "20480"
std::string format_speedup(double ratio);                         // "1.42x"
std::string format_number(double value);                          // compact: "0.3", "1e-05", "128"
std::string format_optional_ms(const std::optional<double>& ms);  // "?" when absent

// The first max_lines lines and at most max_chars characters, with a note of what was cut.
std::string excerpt(const std::string& text, std::size_t max_lines, std::size_t max_chars);
// The first non-empty line, at most max_chars characters.
std::string first_line(const std::string& text, std::size_t max_chars);
// Text for the inside of a fence: without trailing blank lines and spaces.
std::string block_text(std::string text);
std::string join(const std::vector<std::string>& items, const std::string& separator);
// Shortened content-hash id for prompts; the critic accepts unique prefixes back.
std::string short_id(const std::string& id);

// Template fields shared by the actor and fix prompts: backend, precision, constraints, rules
// and the output format.
void add_common_fields(TemplateData& data, const AgentFormat& spec, const std::string& backend,
                       const std::string& hardware, const PrecisionPolicy& precision,
                       const std::vector<std::string>& heavy_ops);

std::vector<LlmMessage> with_system(std::string user_text);

}  // namespace mblast::agents
