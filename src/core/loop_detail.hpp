// What the loop's source files share and nothing else uses (loop.cpp, loop_candidates.cpp,
// loop_finish.cpp).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/loop.hpp"

namespace mblast::loop_detail {

// The run's --time-limit ran out while an evaluation was in flight.
class TimeLimitReached : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The baselines a native backend measured for the reference, without the reference's speedups.
std::vector<BaselineFigure> baseline_figures(const EvalResult& reference);

// The current implementation becomes `technique` applied to `base`, with the built-ins the base
// applies again over it. Those have no file of their own: the ancestry stops at the technique.
void descend(optimize_detail::Current& current, const optimize_detail::Base& base,
             const std::string& technique);

}  // namespace mblast::loop_detail
