#pragma once
// OpenCL candidates: the text format and its launch plan.
//
// A candidate is one `.cl` file of OpenCL C 1.2 kernels that carries its host-side launch plan as
// JSON in a block comment:
//
//   /* @launch
//   {"buffers": [{"name": "partial", "bytes": 4096}],
//    "launches": [
//      {"kernel": "row_max", "global": [32, 64], "local": [1, 64],
//       "args": [{"buffer": "input0"}, {"buffer": "partial"}, {"int": 512},
//                {"local_bytes": 256}]},
//      {"kernel": "scale", "global": [16384], "local": null,
//       "args": [{"buffer": "partial"}, {"buffer": "output0"}, {"float": 0.5}]}]}
//   */
//   __kernel void row_max(__global const float* x, __global float* partial, int cols,
//                         __local float* scratch) { ... }
//
// - Launches run in order on one in-order queue; together they are one forward pass.
// - "global": 1 to 3 work-item counts. "local": the work-group size (same rank, each dividing the
//   global size) or null to let the driver choose.
// - Arguments, in the kernel's parameter order:
//     {"buffer": NAME}      a `__global` pointer. NAME is a forward argument ("input0", "input1",
//                           ...), a parameter by its state_dict name ("conv.weight"), an output
//                           ("output0", ...) or a scratch buffer declared in "buffers".
//     {"int": 5}            an `int` (or `uint`) argument
//     {"float": 1.5}        a `float` argument
//     {"local_bytes": 1024} a `__local` pointer to that many bytes
// - Tensors are C-contiguous and keep the problem's dtype (float32 tensors are `float*`, int64
//   tensors `long*`). Outputs are float32 with the reference's shapes.
// - Inputs and parameters are read-only. Outputs and scratch buffers hold garbage (NaN) when a
//   forward pass starts: write every output element, and clear scratch memory in a kernel when it
//   must start at zero.
//
// The comment may stand anywhere in the file. LLM agents answer with two files instead,
// `kernels.cl` and `launch.json` (the plan alone); combine_candidate_files appends the plan to the
// kernels, so that the compiler's line numbers are those of kernels.cl.
//
// Every error in the plan (bad JSON, an unknown key, buffer or kernel, a wrong argument) is
// reported as an input_error whose message says what to change; the runner reports it as a
// compile error so that the fix agent sees it.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast::opencl {

struct BufferArg {
  std::string name;
};
struct IntArg {
  std::int32_t value = 0;
};
struct FloatArg {
  float value = 0;
};
struct LocalBytesArg {
  std::size_t bytes = 0;
};
using LaunchArg = std::variant<BufferArg, IntArg, FloatArg, LocalBytesArg>;

struct Launch {
  std::string kernel;
  std::vector<std::size_t> global;
  std::optional<std::vector<std::size_t>> local;  // nullopt: the driver chooses
  std::vector<LaunchArg> args;
};

struct ScratchBuffer {
  std::string name;
  std::size_t bytes = 0;
};

struct LaunchPlan {
  std::vector<ScratchBuffer> buffers;
  std::vector<Launch> launches;
};

struct Candidate {
  std::string source;  // the whole file, plan comment included: it is what the compiler sees
  LaunchPlan plan;
  nlohmann::json plan_json;  // the plan as written
};

// Parses a one-file candidate. Throws input_error saying what is wrong with the plan.
Candidate parse_candidate(const std::string& text);

// The plan alone, as found in `launch.json`. Throws input_error.
LaunchPlan parse_launch_plan(const nlohmann::json& plan);

// One-file form of an agent's two files. Throws input_error when launch_json is not valid JSON or
// kernels_cl already carries a plan.
std::string combine_candidate_files(const std::string& kernels_cl, const std::string& launch_json);

// `text` with its plan replaced by `plan` (pretty-printed). Throws input_error when `text` has no
// plan.
std::string with_launch_plan(const std::string& text, const nlohmann::json& plan);

}  // namespace mblast::opencl
