#pragma once
// A native target (OpenCL, RVV) as a Backend: candidates run on the problem's tensor bundles
// (inputs and float64 expected outputs made once from the PyTorch problem on the CPU), and
// speedups are over the target's baselines, measured once.
#include <cstdint>
#include <memory>
#include <string>

#include "mblast/backend.hpp"
#include "native/native_backend.hpp"

namespace mblast {

// The element budget of --shrink (`text` as given; "" is 0, no shrinking). Throws input_error
// for anything but a positive whole number.
std::int64_t shrink_budget(const std::string& text);

std::unique_ptr<Backend> make_native_judge(const BackendTraits& traits,
                                           const BackendContext& context,
                                           std::unique_ptr<NativeBackend> native);

}  // namespace mblast
