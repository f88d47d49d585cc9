#pragma once
// The files the parent exchanges with the harness (runtime/harness.c documents the layout).
#include <string>
#include <vector>

#include "native/bundle.hpp"

namespace mblast::rvv {

// The forward's tensors of one bundle: inputs, then parameters (converted to float32), and the
// expected outputs whose shapes the harness allocates. Throws input_error for a rank above 8.
std::string harness_input(const Bundle& bundle);

struct HarnessOutput {
  std::vector<Tensor> outputs;  // role produced, float32, the expected outputs' names and shapes
  bool inputs_modified = false;
};

// Throws job_error when `data` is not a complete output file for `bundle`.
HarnessOutput read_harness_output(const std::string& data, const Bundle& bundle);

}  // namespace mblast::rvv
