// The actor prompt: everything the model needs to write one candidate for one technique.
#include <fmt/format.h>

#include "agents/format.hpp"
#include "agents/template.hpp"
#include "mblast/agents.hpp"

namespace mblast {

namespace {

using agents::TemplateData;
using agents::TemplateList;

// Similar implementations and past errors are there for ideas; long sources would crowd out
// the task itself.
constexpr std::size_t kSimilarMaxLines = 80;
constexpr std::size_t kSimilarMaxChars = 4000;
constexpr std::size_t kAttemptErrorChars = 200;
constexpr std::size_t kMaxAttempts = 12;

TemplateList evidence_list(const std::vector<StateEvidence>& evidence) {
  TemplateList items;
  for (const auto& e : evidence) {
    TemplateData item;
    item.set("metric", e.metric);
    item.set("op", e.op);
    item.set("threshold", agents::format_number(e.threshold));
    item.set("value", agents::format_number(e.value));
    items.push_back(item);
  }
  return items;
}

TemplateList claim_list(const std::vector<ClaimRow>& claims) {
  TemplateList items;
  for (const auto& claim : claims) {
    TemplateData item;
    item.set("id", agents::short_id(claim.id));
    item.set("text", claim.text);
    item.set("support", std::to_string(claim.support));
    item.set("refute", std::to_string(claim.refute));
    items.push_back(item);
  }
  return items;
}

TemplateList similar_list(const std::vector<ImplementationRow>& similar) {
  TemplateList items;
  for (const auto& impl : similar) {
    TemplateData item;
    item.set("task", impl.task);
    item.set("speedup", impl.speedup ? agents::format_speedup(*impl.speedup) : "?");
    item.set("hardware", impl.hardware);
    item.set("has_technique", impl.technique_id.has_value());
    item.set("technique", impl.technique_id.value_or(""));
    item.set("language", impl.language);
    item.set("excerpt",
             agents::block_text(agents::excerpt(impl.source, kSimilarMaxLines, kSimilarMaxChars)));
    items.push_back(item);
  }
  return items;
}

std::string attempt_label(const AttemptRow& attempt) {
  if (attempt.iteration && attempt.step) {
    return fmt::format("iteration {} step {}", *attempt.iteration, *attempt.step);
  }
  if (attempt.step) return fmt::format("step {}", *attempt.step);
  return "attempt";
}

TemplateList attempt_list(const std::vector<AttemptRow>& attempts) {
  TemplateList items;
  for (std::size_t i = 0; i < attempts.size() && i < kMaxAttempts; ++i) {
    const auto& attempt = attempts[i];
    std::string error =
        attempt.error ? agents::first_line(trim_error(*attempt.error, 1000), kAttemptErrorChars)
                      : std::string();
    TemplateData item;
    item.set("label", attempt_label(attempt));
    item.set("technique", attempt.technique_id.value_or("none"));
    item.set("outcome", attempt.outcome);
    item.set("has_speedup", attempt.outcome == "correct" && attempt.speedup.has_value());
    item.set("speedup", attempt.speedup ? agents::format_speedup(*attempt.speedup) : "");
    item.set("has_error", !error.empty());
    item.set("error", error);
    items.push_back(item);
  }
  return items;
}

}  // namespace

std::vector<LlmMessage> render_actor(const ActorContext& c) {
  const auto& spec = c.format;
  TemplateData data;
  agents::add_common_fields(data, spec, c.backend, c.hardware, c.precision, c.heavy_ops);
  data.set("task", c.task);
  data.set("problem_source", agents::block_text(c.problem_source));
  data.set("slot", c.slot);
  data.set("has_slot_detail", !c.slot_detail.empty());
  data.set("slot_detail", c.slot_detail);
  data.set("has_slot_code", !c.slot_code.empty());
  data.set("slot_code", agents::block_text(c.slot_code));

  data.set("current_is_reference", c.current.is_reference);
  data.set("current_source", agents::block_text(c.current.source));
  data.set("current_ms", agents::format_optional_ms(c.current.time_ms));
  data.set("baseline_ms", agents::format_optional_ms(c.current.baseline_ms));
  data.set("current_speedup",
           c.current.speedup ? agents::format_speedup(*c.current.speedup) : std::string("?"));

  data.set("state_id", c.state.id);
  data.set("state_name", c.state.name);
  data.set("state_description", c.state.description);
  data.set("evidence", evidence_list(c.evidence));

  data.set("technique_id", c.technique.id);
  data.set("technique_name", c.technique.name);
  data.set("technique_description", c.technique.description);
  data.set("claims", claim_list(c.claims));

  data.set("has_similar", !c.similar.empty());
  data.set("similar", similar_list(c.similar));
  data.set("has_attempts", !c.past_attempts.empty());
  data.set("attempts", attempt_list(c.past_attempts));
  return agents::with_system(agents::render_prompt("actor", data));
}

}  // namespace mblast
