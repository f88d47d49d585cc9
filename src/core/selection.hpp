#pragma once
// When a judged candidate replaces the run's best (or the implementation the next step starts
// from). Each evaluation times the candidate against eager in its own worker process. Where eager
// is steady across the run's evaluations, the speedups compare. Where it is not (a host-bound
// model's eager differs between processes by up to 2.1x: H200 call 44, eager_variance.py), a
// launch-free candidate's own time stays put while its speedup carries its process's eager: by
// speedup, cuDNN autotuning at 0.635 ms read 7.27x and replaced a CUDA graph at 0.544 ms and 3.6x
// (call 43). There the candidates' own times compare, and the reference's time is eager's median.
#include <optional>
#include <string>
#include <vector>

namespace mblast::optimize_detail {

// A contender must beat the incumbent by this factor (in speedup, or in time where eager varies).
inline constexpr double kMinGain = 1.01;
// Eager is steady when its slowest evaluation of the run is within this factor of its fastest.
inline constexpr double kSteadyEager = 1.10;

// An implementation as the selection sees it: its speedup over eager timed in the same process, and
// its own time.
struct Standing {
  double speedup = 1.0;
  std::optional<double> time_ms;
};

struct SelectionVerdict {
  bool replaces = false;
  // Where speedup and time disagreed: what decided.
  std::optional<std::string> why;
};

// The run's eager times so far (the reference's evaluation and every step's) as the selection
// needs them.
struct EagerTimes {
  std::vector<double> ms;
  bool steady() const;
  std::optional<double> median() const;
};

// Eager steady (or a time unknown): the contender's speedup must exceed the incumbent's by
// kMinGain. Eager varying: its time must be under the incumbent's by kMinGain, and its speedup over
// the eager of its own evaluation above kMinGain (never slower than the reference beside it).
SelectionVerdict select(const Standing& contender, const Standing& incumbent,
                        const EagerTimes& eager);

}  // namespace mblast::optimize_detail
