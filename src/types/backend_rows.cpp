// What every backend shares, whichever are linked: looking rows up by name, checking a command's
// backend options against them, and the Backend interface's default batch judging.
#include <algorithm>

#include "mblast/backend.hpp"
#include "mblast/error.hpp"

namespace mblast {

std::string backend_names(const BackendRows& rows, std::string_view last_separator) {
  std::string names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) names += i + 1 == rows.size() ? std::string(last_separator) : ", ";
    names += rows[i].traits.name;
  }
  return names;
}

const BackendRow& find_backend(const BackendRows& rows, std::string_view name) {
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const BackendRow& row) { return row.traits.name == name; });
  if (it == rows.end()) {
    throw input_error("unknown backend '" + std::string(name) + "'",
                      "use --backend " + backend_names(rows));
  }
  return *it;
}

void check_target_options(const BackendRows& rows, const BackendTraits& traits,
                          const std::map<std::string, std::string>& target) {
  for (const auto& [key, value] : target) {
    if (value.empty()) continue;
    const auto takes = [&](const BackendTraits& t) {
      return std::any_of(t.options.begin(), t.options.end(),
                         [&](const BackendOption& o) { return o.key == key; });
    };
    if (takes(traits)) {
      for (const auto& o : traits.options) {
        if (o.key == key && o.check) o.check(value);
      }
      continue;
    }
    std::string flag = "--" + key, others;
    for (const auto& row : rows) {
      if (!takes(row.traits)) continue;
      others += (others.empty() ? "" : ", ") + row.traits.name;
      for (const auto& o : row.traits.options) {
        if (o.key == key) flag = o.flag;
      }
    }
    throw input_error(flag + " is not an option of the " + traits.name + " backend",
                      others.empty() ? "drop it" : "drop it, or use --backend " + others);
  }
}

std::optional<std::vector<EvalResult>> Backend::evaluate_workloads(
    const std::vector<std::filesystem::path>& problems, const Artifact& artifact,
    bool compile_baseline) {
  const bool against_itself = !problems.empty() && artifact.candidate == problems.front();
  std::vector<EvalResult> results;
  for (const auto& problem : problems) {
    Artifact judged = artifact;
    if (against_itself) judged.candidate = problem;
    auto result = evaluate_on(problem, judged, compile_baseline);
    if (!result) return std::nullopt;
    results.push_back(std::move(*result));
    if (!results.back().correct) break;
  }
  return results;
}

std::vector<EvalResult> Backend::judge_all(const std::vector<std::filesystem::path>& candidates) {
  std::vector<EvalResult> results;
  for (const auto& candidate : candidates) results.push_back(judge(candidate));
  return results;
}

}  // namespace mblast
