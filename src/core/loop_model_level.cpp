// The model-level optimizer's parts of the loop (ModelBlaster): the Model's region windows as slots
// (--regions), and the graph-first round (--graph-first): the run's first step judges the whole
// model in a CUDA graph; where that is correct and faster, every later built-in candidate is
// judged as it is and, where its profile leaves a graph something to remove, inside such a graph
// too, the graph staying the outermost wrapper; later steps build on the candidate without it.
// Without --graph-first the same holds from the step where the selector's CUDA graph becomes the
// best.
#include <fmt/format.h>

#include <algorithm>

#include "core/loop.hpp"

namespace mblast {

namespace fs = std::filesystem;
using namespace optimize_detail;

namespace {

constexpr const char* kGraphTransform = "cuda_graph";

bool is_graph_transform(const TechniqueRow& technique) {
  return technique.builtin && technique.builtin->transform == kGraphTransform;
}

bool in_graph_group(const TechniqueRow& technique) {
  if (!technique.builtin) return false;
  const auto& groups = technique.builtin->groups;
  return std::find(groups.begin(), groups.end(), "graph") != groups.end();
}

}  // namespace

// The Model's region windows as slots beside the whole model (--regions), found once per run and
// kept in its config.json ("regions"), so that a resumed run has the same slots. A model that
// torch.fx cannot capture is kept whole, with the reason there and in the log.
void Loop::add_region_slots() {
  nlohmann::json config = run_.config();
  std::optional<ProgramRegions> regions;
  if (config.contains("regions")) {
    regions = ProgramRegions::from_json(config["regions"]);
  } else {
    regions = backend_.program_regions();
    if (!regions) {
      note("--regions: the " + options_.judge.backend +
           " backend has no regions; the model is kept whole");
      return;
    }
    config["regions"] = regions->to_json();
    run_.write_config(config);
  }
  if (!regions->captured) {
    note("--regions: the model is kept whole: " + regions->failure);
    return;
  }
  std::string listed;
  for (const auto& window : regions->windows) {
    slots_.push_back({.id = window.slot_id(),
                      .time_share = window.share,
                      .ops = window.ops,
                      .op_kinds = window.op_kinds,
                      .region_signature = window.signature,
                      .region_key = window.key,
                      .region_computation = window.computation,
                      .input_shapes = window.input_shapes,
                      .region_code = window.code});
    listed += fmt::format("{}{} ({:.0f}%)", listed.empty() ? "" : ", ", window.slot_id(),
                          window.share * 100);
  }
  note(fmt::format("--regions: {} region window{}{}{}", regions->windows.size(),
                   regions->windows.size() == 1 ? "" : "s", listed.empty() ? "" : ": ", listed));
}

// Where the same computation was made faster before on this backend and hardware, in this run or
// an earlier one, by a built-in that may still be applied here: the best such attempt at the same
// shapes (the region's exact key), else at other shapes (its computation key); the region tries
// its technique first. (An LLM's region candidate is a whole model file, so only built-ins carry
// over.)
std::optional<AttemptRow> Loop::region_reuse(const Slot& slot,
                                             const std::vector<TechniqueRow>& eligible,
                                             const SelectorConfig& selector) const {
  using Match = KnowledgeBase::RegionMatch;
  const std::pair<Match, const std::string*> lookups[] = {
      {Match::same_shapes, &slot.region_key}, {Match::any_shapes, &slot.region_computation}};
  for (const auto& [match, key] : lookups) {
    if (key->empty()) continue;
    for (auto& attempt : kb_.verified_regions(match, *key, options_.judge.backend, hardware_)) {
      const auto technique = std::find_if(eligible.begin(), eligible.end(), [&](const auto& t) {
        return t.id == *attempt.technique_id;
      });
      if (technique == eligible.end() || technique->implementer != "builtin" ||
          !technique_unavailable(*technique, options_.judge.backend, selector).empty())
        continue;
      return std::move(attempt);
    }
  }
  return std::nullopt;
}

// The round's CUDA-graph built-in where the technique selector would allow it
// (technique_unavailable: requirements, deprecation).
std::optional<Loop::Choice> Loop::graph_round_choice(const Classification& state,
                                                     const SelectorConfig& selector) {
  const auto model = std::find_if(slots_.begin(), slots_.end(),
                                  [](const Slot& slot) { return slot.id == "model"; });
  const auto all = kb_.techniques(options_.judge.backend);
  const auto eligible =
      eligible_techniques(all, "model", current_, tried_, options_.techniques,
                          backend_.traits().builtins_need_a_candidate, problem_ops_);
  for (const auto& technique : eligible.techniques) {
    if (model == slots_.end() || !is_graph_transform(technique) ||
        !technique_unavailable(technique, options_.judge.backend, selector).empty())
      continue;
    Choice choice;
    choice.decided_by = "graph-first round";
    choice.slot = static_cast<std::size_t>(model - slots_.begin());
    choice.state = state;
    choice.technique = technique;
    choice.base = eligible.base_for(technique, current_);
    return choice;
  }
  graph_round_ = GraphRound::illegal;
  for (const auto& technique : all) {
    if (!is_graph_transform(technique)) continue;
    const std::string why = avoided_because(technique, current_.signature.metrics());
    if (why.empty()) continue;
    note("--graph-first: a whole-model CUDA graph cannot pay here (" + why +
         "); candidates are judged as they are");
    return std::nullopt;
  }
  note("--graph-first: no CUDA-graph built-in may run here (a GPU, the catalogue's " +
       std::string(kGraphTransform) + " built-in, --technique); candidates are judged as they are");
  return std::nullopt;
}

// The round's graph is the baseline of later candidates only where it is correct and faster than
// the reference: a graph that loses (its inputs copied in and outputs cloned out each call cost
// more than the launches it saves: level3/17_SqueezeNetFireModule at 0.82x on an H100, call 110)
// would hold back every candidate judged inside it.
void Loop::end_graph_round(const Choice& choice, const Evaluation& final, bool faster) {
  if (graph_round_ != GraphRound::pending || !is_graph_transform(choice.technique)) return;
  const bool correct = final.outcome == Outcome::correct;
  graph_round_ = correct && faster ? GraphRound::legal : GraphRound::illegal;
  if (graph_round_ == GraphRound::legal) {
    note(
        "--graph-first: the whole model runs faster in a CUDA graph; later built-in candidates "
        "are judged inside one");
  } else if (correct) {
    note(fmt::format(
        "--graph-first: the whole model in a CUDA graph is correct but not faster than the "
        "reference ({:.3f}x); candidates are judged as they are",
        final.result.speedup.value_or(0.0)));
  } else {
    note("--graph-first: the whole model cannot run in a CUDA graph (" +
         final.result.error.value_or(std::string(to_string(final.outcome))) +
         "); candidates are judged as they are");
  }
}

void Loop::restore_graph_round(const StepRecord& record) {
  if (graph_round_ != GraphRound::pending) return;
  const auto technique = kb_.technique(record.technique);
  if (!technique || !is_graph_transform(*technique)) {
    graph_round_ = GraphRound::illegal;
    return;
  }
  graph_round_ = record.outcome == Outcome::correct && record.improved ? GraphRound::legal
                                                                       : GraphRound::illegal;
}

// torch.compile over a forward that captures a CUDA graph fails in the capture
// (cudaErrorStreamCaptureInvalidated: level3/20_MobileNetV2 on the H200, calls 84 and 86) or
// compiles nothing useful; the graph over the compiled model is the composition that works.
bool Loop::stays_outermost(const Choice& choice) const {
  return graph_round_ == GraphRound::off && is_graph_transform(choice.technique) &&
         choice.base.then.empty() && slots_[choice.slot].id == "model";
}

void Loop::keep_the_graph_outermost(const TechniqueRow& technique) {
  if (graph_round_ != GraphRound::off || !is_graph_transform(technique)) return;
  graph_round_ = GraphRound::legal;
  note(
      "the whole model in a CUDA graph is the best so far: later built-in candidates are judged "
      "as they are and, where their profile leaves the graph something to remove, under such a "
      "graph, never over it");
}

bool Loop::wraps_in_graph(const TechniqueRow& technique) const {
  return graph_round_ == GraphRound::legal && technique.implementer == "builtin" &&
         !in_graph_group(technique);
}

// Inside a legal round every built-in candidate is in a graph already: the graph alone again would
// judge what an earlier step judged.
void Loop::drop_the_rounds_graph(std::vector<TechniqueRow>& techniques) const {
  if (graph_round_ != GraphRound::legal) return;
  std::erase_if(techniques, [](const TechniqueRow& t) { return is_graph_transform(t); });
}

std::optional<std::string> Loop::graph_wrapped(const std::string& stem,
                                               const std::string& inner_source,
                                               fs::path& inner_file) {
  inner_file =
      run_.save_candidate(stem + "-inner", inner_source, backend_.traits().candidate_extension);
  const auto wrapped = backend_.builtin(kGraphTransform, inner_file, false, {});
  if (!wrapped.source) {
    note(std::string(options_.graph_first ? "--graph-first: " : "") + stem +
         " could not be wrapped in a CUDA graph (" + wrapped.why_not + "); judged as it is");
    inner_file.clear();
  }
  return wrapped.source;
}

// A graph over a candidate that compile has already fused adds its input copies and output clones
// to every call and removes next to nothing: SOL-ExecBench's triton/rmsnorm on an H100 read 7.97x
// with the coordinate-descent compile alone (call 113) and 4.01x with the compile inside the
// graph that had become the best (call 117). So the candidate is judged as it is first, and inside
// the graph only where its own profile leaves the graph something to remove (the graph
// built-in's avoid_when over the candidate's signature).
std::vector<Evaluation> Loop::judged_with_and_without_graph(const std::string& stem,
                                                            const std::string& source) {
  Evaluation plain = write_and_judge(stem, source, 0);
  if (plain.outcome != Outcome::correct) return {plain};
  if (const std::string why = graph_cannot_pay(plain.result.signature); !why.empty()) {
    note(fmt::format("{} is not judged inside a CUDA graph too: the graph cannot pay over it ({})",
                     stem, why));
    return {plain};
  }
  if (const auto spent = budget_spent()) {
    note(fmt::format("{} is not judged inside a CUDA graph too: {}", stem, *spent));
    return {plain};
  }
  fs::path inner;
  const auto wrapped_source = graph_wrapped(stem, source, inner);
  if (!wrapped_source) return {plain};
  Evaluation wrapped = write_and_judge(stem + "+cuda_graph", *wrapped_source, 0);
  wrapped.inner = inner;
  const bool graph_pays = wrapped.outcome == Outcome::correct &&
                          select({wrapped.result.speedup.value_or(0.0), wrapped.result.cand_ms},
                                 {plain.result.speedup.value_or(0.0), plain.result.cand_ms},
                                 eager_times(wrapped.result.ref_ms))
                              .replaces;
  note(fmt::format("{}: {:.3f}x as it is, {} inside a CUDA graph; the step's candidate is the {}",
                   stem, plain.result.speedup.value_or(0.0),
                   wrapped.outcome == Outcome::correct
                       ? fmt::format("{:.3f}x", wrapped.result.speedup.value_or(0.0))
                       : std::string(to_string(wrapped.outcome)),
                   graph_pays ? "graph's" : "one without"));
  if (graph_pays) return {plain, wrapped};
  return {wrapped, plain};
}

std::string Loop::graph_cannot_pay(const ProfileSignature& signature) const {
  for (const auto& technique : kb_.techniques(options_.judge.backend)) {
    if (is_graph_transform(technique)) return avoided_because(technique, signature.metrics());
  }
  return {};
}

}  // namespace mblast
