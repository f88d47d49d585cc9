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

}  // namespace

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

Classification classify(const std::vector<StateRow>& states, const Signature& signature) {
  std::map<std::string, const StateRow*> by_id;
  for (const auto& state : states) by_id[state.id] = &state;

  struct Match {
    Classification classification;
    std::size_t order = 0;
  };
  std::optional<Match> best;
  for (std::size_t order = 0; order < states.size(); ++order) {
    // The path from the root down to this state; every condition on it must hold.
    std::vector<const StateRow*> path;
    for (const StateRow* s = &states[order]; s != nullptr;) {
      path.insert(path.begin(), s);
      if (!s->parent_id) break;
      auto parent = by_id.find(*s->parent_id);
      if (parent == by_id.end() || path.size() > states.size()) {
        s = nullptr;
        path.clear();  // a dangling or cyclic parent: this state cannot be reached
      } else {
        s = parent->second;
      }
    }
    if (path.empty()) continue;
    Classification candidate;
    candidate.state_id = states[order].id;
    candidate.depth = static_cast<int>(path.size()) - 1;
    bool holds = true;
    for (const StateRow* s : path) {
      for (auto& e : check(*s, signature)) {
        holds = holds && e.holds;
        candidate.evidence.push_back(std::move(e));
      }
    }
    if (!holds) continue;
    const bool better = !best || candidate.depth > best->classification.depth ||
                        (candidate.depth == best->classification.depth &&
                         candidate.evidence.size() > best->classification.evidence.size());
    if (better) best = Match{std::move(candidate), order};
  }
  if (!best) {
    throw input_error("no state of the knowledge base matches this signature",
                      "keep a state without conditions (the seed's 'unclassified') as a fallback");
  }
  return std::move(best->classification);
}

}  // namespace mblast
