// The fix prompt: the failure cut to what matters, the failing code, earlier failed repairs.
#include <fmt/format.h>

#include "agents/format.hpp"
#include "agents/template.hpp"
#include "mblast/agents.hpp"

namespace mblast {

namespace {

using agents::TemplateData;

// Earlier repairs matter less than the current failure, so their errors get less room.
constexpr std::size_t kErrorChars = 4000;
constexpr std::size_t kEarlierErrorChars = 800;

const char* const kOutcomes[] = {"compile_error", "runtime_error", "incorrect", "timeout", "cheat"};

std::string optional_number(const std::optional<double>& value) {
  return value ? agents::format_number(*value) : "?";
}

}  // namespace

std::vector<LlmMessage> render_fix(const FixContext& c) {
  const auto& spec = c.format;
  TemplateData data;
  agents::add_common_fields(data, spec, c.backend, c.hardware, c.precision, c.heavy_ops);
  data.set("task", c.task);
  data.set("problem_source", agents::block_text(c.problem_source));
  data.set("has_technique", c.technique.has_value());
  data.set("technique_id", c.technique ? c.technique->id : "");
  data.set("technique_name", c.technique ? c.technique->name : "");
  data.set("candidate_source", agents::block_text(c.candidate_source));
  data.set("slot", c.slot);
  data.set("has_slot_detail", !c.slot_detail.empty());
  data.set("slot_detail", c.slot_detail);
  data.set("has_slot_code", !c.slot_code.empty());
  data.set("slot_code", agents::block_text(c.slot_code));

  const auto& f = c.failure;
  bool known = false;
  for (const char* outcome : kOutcomes) {
    data.set(std::string("outcome_") + outcome, to_string(f.outcome) == outcome);
    known = known || to_string(f.outcome) == outcome;
  }
  data.set("outcome_other", !known);
  data.set("outcome", std::string(to_string(f.outcome)));
  data.set("has_mismatch", f.max_abs_err.has_value() || f.max_rel_err.has_value());
  data.set("max_abs_err", optional_number(f.max_abs_err));
  data.set("max_rel_err", optional_number(f.max_rel_err));
  data.set("has_location", !f.location.empty());
  data.set("location", f.location);
  data.set("has_flags", !f.flags.empty());
  data.set("flags", agents::join(f.flags, ", "));
  std::string error = trim_error(f.error, kErrorChars);
  data.set("has_error", !error.empty());
  data.set("error", error);

  agents::TemplateList earlier;
  for (std::size_t i = 0; i < c.earlier.size(); ++i) {
    TemplateData item;
    item.set("index", std::to_string(i + 1));
    item.set("outcome", std::string(to_string(c.earlier[i].outcome)));
    item.set("error", trim_error(c.earlier[i].error, kEarlierErrorChars));
    earlier.push_back(item);
  }
  data.set("has_earlier", !c.earlier.empty());
  data.set("earlier", earlier);
  return agents::with_system(agents::render_prompt("fix", data));
}

}  // namespace mblast
