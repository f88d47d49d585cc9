#pragma once
// The one place that includes kainjow mustache, and the conventions of prompts/*.md: no HTML
// escaping, and standalone section lines removed as the mustache spec says.
#include <string>
#include <string_view>

#include <kainjow/mustache.hpp>

namespace mblast::agents {

using TemplateData = kainjow::mustache::data;
using TemplateList = kainjow::mustache::list;

// Renders the template `text` (named `name` in errors). Throws input_error when it is malformed,
// which can only happen with an edited template from $MBLAST_PROMPTS_DIR.
std::string render_template(std::string_view name, const std::string& text,
                            const TemplateData& data);

// load_prompt(name) rendered with `data`.
std::string render_prompt(std::string_view name, const TemplateData& data);

}  // namespace mblast::agents
