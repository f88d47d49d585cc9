// `mblast report`: failed steps grouped by cause, so that a bug that fails many problems the same
// way (a judge, sandbox or cache error) stands out from the candidates that were simply wrong.
#include <algorithm>
#include <map>
#include <regex>

#include "mblast/report.hpp"

namespace mblast::report {

namespace {

constexpr std::size_t kCauseChars = 160;

// The run's own details in an error line, each with what stands in for it.
const std::vector<std::pair<std::regex, std::string>>& replacements() {
  static const std::vector<std::pair<std::regex, std::string>> list = {
      // The candidate file the judge names first.
      {std::regex(R"(^\S+\.(py|cu|cl|c|json): )"), ""},
      // A wrong output: where and by how much differs per run; the flags say why.
      {std::regex(R"(^seed \d+: output \d+ differs at index .*?(\[flags: [^\]]*\])?$)"),
       "an output differs from the reference $1"},
      {std::regex(R"('/[^']*')"), "'PATH'"},
      {std::regex(R"((^|[\s(=])/[^\s,;:()']+)"), "$1PATH"},
      {std::regex(R"(\b0x[0-9a-fA-F]+\b)"), "N"},
      {std::regex(R"(-?\b\d+(\.\d+)?(e[-+]?\d+)?\b)"), "N"},
  };
  return list;
}

}  // namespace

std::string failure_cause(const std::string& error) {
  std::string cause = error.substr(0, error.find('\n'));
  for (const auto& [pattern, stand_in] : replacements())
    cause = std::regex_replace(cause, pattern, stand_in);
  while (!cause.empty() && cause.back() == ' ') cause.pop_back();
  if (cause.size() > kCauseChars) cause = cause.substr(0, kCauseChars - 3) + "...";
  return cause.empty() ? "no error text" : cause;
}

std::vector<FailureCause> failure_causes(const std::vector<ProblemRow>& rows) {
  std::map<std::pair<std::string, std::string>, FailureCause> by_cause;
  for (const auto& row : rows) {
    for (const auto& failed : row.failures) {
      const std::string cause = failure_cause(failed.error);
      FailureCause& group = by_cause[{failed.outcome, cause}];
      group.outcome = failed.outcome;
      group.cause = cause;
      ++group.steps;
      if (std::find(group.problems.begin(), group.problems.end(), row.name) == group.problems.end())
        group.problems.push_back(row.name);
      if (std::find(group.techniques.begin(), group.techniques.end(), failed.technique) ==
          group.techniques.end())
        group.techniques.push_back(failed.technique);
    }
  }
  std::vector<FailureCause> causes;
  for (auto& [key, group] : by_cause) {
    std::sort(group.techniques.begin(), group.techniques.end());
    causes.push_back(std::move(group));
  }
  std::stable_sort(causes.begin(), causes.end(), [](const auto& a, const auto& b) {
    return a.problems.size() != b.problems.size() ? a.problems.size() > b.problems.size()
                                                  : a.steps > b.steps;
  });
  return causes;
}

}  // namespace mblast::report
