#include "core/selection.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mblast/support.hpp"

namespace mblast::optimize_detail {

bool EagerTimes::steady() const {
  if (ms.size() < 2) return true;
  const auto [low, high] = std::minmax_element(ms.begin(), ms.end());
  return *low > 0 && *high <= *low * kSteadyEager;
}

std::optional<double> EagerTimes::median() const {
  if (ms.empty()) return std::nullopt;
  return percentile(ms, 0.5);
}

SelectionVerdict select(const Standing& contender, const Standing& incumbent,
                        const EagerTimes& eager) {
  const bool by_speedup = contender.speedup > incumbent.speedup * kMinGain;
  if (eager.steady() || !contender.time_ms || !incumbent.time_ms) return {.replaces = by_speedup};
  const bool by_time =
      contender.speedup > kMinGain && *contender.time_ms * kMinGain < *incumbent.time_ms;
  if (by_time == by_speedup) return {.replaces = by_time};
  return {.replaces = by_time,
          .why = fmt::format("{:.4g} ms against {:.4g} ms, {:.3f}x against {:.3f}x each over the "
                             "eager of its own evaluation; eager varied over the run, so the times "
                             "decide",
                             *contender.time_ms, *incumbent.time_ms, contender.speedup,
                             incumbent.speedup)};
}

}  // namespace mblast::optimize_detail
