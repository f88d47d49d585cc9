#pragma once
// The comparison of `mblast report DIR --against OTHER`, as each rendering shows it.
#include <iosfwd>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/report.hpp"

namespace mblast::report {

// The geometric mean of the running best after 1, 2, ... evaluations on each side, over the
// problems correct in both (at most 30 evaluations).
struct ComparisonCurves {
  std::vector<double> self, other;
};
ComparisonCurves comparison_curves(const Comparison& comparison);

void write_comparison_markdown(std::ostream& out, const Comparison& comparison);
nlohmann::json comparison_json(const Comparison& comparison);

}  // namespace mblast::report
