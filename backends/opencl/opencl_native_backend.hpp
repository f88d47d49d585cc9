#pragma once
// The OpenCL backend behind mblast's NativeBackend interface, for `mblast eval` and the loop.
//   baselines  "naive_opencl": the problem's <stem>.naive.cl beside it, when there is one and it
//              is correct, timed like a candidate; "torch_cpu": PyTorch eager on the CPU, from
//              the bundles' meta.json. The first one found is the primary.
//   signature  opencl_signature.hpp: kernel shares, launch gaps and the fractions of the
//              device's ceilings (opencl_ceilings.hpp), measured once and cached
//   built-in   "workgroup_size_sweep" (workgroup_sweep.hpp)
//   assemble   kernels.cl + launch.json, or one .cl file with its @launch plan
#include <memory>

#include "mblast/eval_options.hpp"
#include "native/native_backend.hpp"

namespace mblast::opencl {

std::unique_ptr<NativeBackend> make_opencl_backend(const EvalOptions& options);

}  // namespace mblast::opencl
