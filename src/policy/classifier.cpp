#include <algorithm>
#include <cstdio>
#include <map>

#include "mblast/error.hpp"
#include "mblast/policy.hpp"

namespace mblast {

namespace {

bool compare(double value, const std::string& op, double threshold) {
  if (op == "<") return value < threshold;
  if (op == "<=") return value <= threshold;
  if (op == ">") return value > threshold;
  if (op == ">=") return value >= threshold;
  if (op == "==") return value == threshold;
  throw input_error("state condition has unknown operator '" + op + "'",
                    "use one of <, <=, >, >=, ==");
}

std::vector<ConditionEvidence> check(const StateRow& state, const Signature& signature) {
  std::vector<ConditionEvidence> result;
  for (const auto& condition : state.conditions) {
    ConditionEvidence evidence;
    evidence.state_id = state.id;
    evidence.metric = condition.at("metric").get<std::string>();
    evidence.op = condition.at("op").get<std::string>();
    evidence.threshold = condition.at("value").get<double>();
    if (auto found = signature.find(evidence.metric); found != signature.end()) {
      evidence.value = found->second;
      evidence.holds = compare(found->second, evidence.op, evidence.threshold);
    }
    result.push_back(std::move(evidence));
  }
  return result;
}

using StatesById = std::map<std::string, const StateRow*>;

StatesById index_states(const std::vector<StateRow>& states) {
  StatesById by_id;
  for (const auto& state : states) by_id[state.id] = &state;
  return by_id;
}

// The states from the root down to `state`; empty when a parent is missing or the parents form a
// cycle (such a state cannot be reached).
std::vector<const StateRow*> root_path(const StatesById& by_id, const StateRow& state) {
  std::vector<const StateRow*> path;
  for (const StateRow* s = &state;;) {
    path.insert(path.begin(), s);
    if (!s->parent_id) return path;
    const auto parent = by_id.find(*s->parent_id);
    if (parent == by_id.end() || path.size() > by_id.size()) return {};
    s = parent->second;
  }
}

}  // namespace

std::string avoided_because(const TechniqueRow& technique, const Signature& signature) {
  if (!technique.builtin) return {};
  for (const auto& condition : technique.builtin->avoid_when) {
    const std::string metric = condition.at("metric").get<std::string>();
    const std::string op = condition.at("op").get<std::string>();
    const double threshold = condition.at("value").get<double>();
    const auto found = signature.find(metric);
    if (found == signature.end() || !compare(found->second, op, threshold)) continue;
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, "%s = %.4g (%s %.4g)", metric.c_str(), found->second,
                  op.c_str(), threshold);
    return buffer;
  }
  return {};
}

std::string Classification::explain() const {
  std::string text;
  for (const auto& e : evidence) {
    char buffer[160];
    if (e.value) {
      std::snprintf(buffer, sizeof buffer, "%s = %.4g (%s %.4g)", e.metric.c_str(), *e.value,
                    e.op.c_str(), e.threshold);
    } else {
      std::snprintf(buffer, sizeof buffer, "%s missing", e.metric.c_str());
    }
    text += (text.empty() ? "" : ", ") + std::string(buffer);
  }
  return text.empty() ? "no conditions" : text;
}

namespace {

struct Match {
  Classification classification;
  std::string root;
};

// Every state whose conditions, and those of all its ancestors, hold; in definition order.
std::vector<Match> matching_states(const std::vector<StateRow>& states,
                                   const Signature& signature) {
  const StatesById by_id = index_states(states);
  std::vector<Match> matches;
  for (const auto& state : states) {
    const auto path = root_path(by_id, state);
    if (path.empty()) continue;
    Match match{
        .classification = {.state_id = state.id, .depth = static_cast<int>(path.size()) - 1},
        .root = path.front()->id};
    bool holds = true;
    for (const StateRow* s : path) {
      for (auto& e : check(*s, signature)) {
        holds = holds && e.holds;
        match.classification.evidence.push_back(std::move(e));
      }
    }
    if (holds) matches.push_back(std::move(match));
  }
  return matches;
}

// The first of the best: deeper, then more evidence; definition order breaks ties.
const Match* best_of(const std::vector<const Match*>& matches) {
  const Match* best = nullptr;
  for (const Match* m : matches) {
    const auto& c = m->classification;
    if (!best || c.depth > best->classification.depth ||
        (c.depth == best->classification.depth &&
         c.evidence.size() > best->classification.evidence.size())) {
      best = m;
    }
  }
  return best;
}

}  // namespace

// The root names the kind of bottleneck and decides first; only then the deepest state under it,
// so that a finer state of another kind (one more counter that happens to hold) never overrides
// the kind the speed-of-light and launch numbers name.
Classification classify(const std::vector<StateRow>& states, const Signature& signature) {
  const std::vector<Match> matches = matching_states(states, signature);
  std::vector<const Match*> roots;
  for (const auto& m : matches) {
    if (m.classification.depth == 0) roots.push_back(&m);
  }
  const Match* root = best_of(roots);
  if (!root) {
    throw input_error("no state of the knowledge base matches this signature",
                      "keep a state without conditions (the seed's 'unclassified') as a fallback");
  }
  std::vector<const Match*> under_root;
  for (const auto& m : matches) {
    if (m.root == root->root) under_root.push_back(&m);
  }
  return best_of(under_root)->classification;
}

std::string root_of(const std::vector<StateRow>& states, const std::string& state_id) {
  const StatesById by_id = index_states(states);
  const auto state = by_id.find(state_id);
  if (state == by_id.end()) return {};
  const auto path = root_path(by_id, *state->second);
  return path.empty() ? std::string() : path.front()->id;
}

std::vector<std::string> try_first_of(const std::vector<StateRow>& states,
                                      const std::string& state_id) {
  const StatesById by_id = index_states(states);
  const auto state = by_id.find(state_id);
  if (state == by_id.end()) return {};
  const auto path = root_path(by_id, *state->second);
  std::vector<std::string> ranked;
  for (auto s = path.rbegin(); s != path.rend(); ++s) {  // the state first, then its ancestors
    for (const auto& technique : (*s)->try_first) {
      if (std::find(ranked.begin(), ranked.end(), technique) == ranked.end()) {
        ranked.push_back(technique);
      }
    }
  }
  return ranked;
}

}  // namespace mblast
