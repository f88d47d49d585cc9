#pragma once
// The OpenCL backend behind mblast's NativeBackend interface, for `mblast eval` and the loop.
//   baselines  "torch_cpu": PyTorch eager on the CPU, from the bundles' meta.json; "clblast":
//              CLBlast on the device, for a problem whose forward is one GEMM (clblast_gemm.hpp),
//              verified and timed like a candidate; "naive_opencl": the problem's
//              <stem>.naive.cl beside it, when there is one and it is correct, timed like a
//              candidate. Ordered by order_opencl_baselines; the first is the primary.
//   signature  opencl_signature.hpp: kernel shares, launch gaps and the fractions of the
//              device's ceilings (opencl_ceilings.hpp), measured once and cached
//   built-in   "workgroup_size_sweep" (workgroup_sweep.hpp)
//   assemble   kernels.cl + launch.json, or one .cl file with its @launch plan
#include <memory>
#include <optional>
#include <vector>

#include "mblast/eval_options.hpp"
#include "native/native_backend.hpp"

namespace mblast::opencl {

std::unique_ptr<NativeBackend> make_opencl_backend(const EvalOptions& options);

// The baselines that exist, headline first, as a user would rank the alternatives. On a CPU
// device: the faster of PyTorch on that CPU and the tuned library, then the other, then the naive
// kernel. On other devices, where the host's PyTorch is not the alternative: the library, the
// naive kernel, then PyTorch.
std::vector<NativeBaseline> order_opencl_baselines(std::optional<NativeBaseline> torch,
                                                   std::optional<NativeBaseline> library,
                                                   std::optional<NativeBaseline> naive,
                                                   bool cpu_device);

}  // namespace mblast::opencl
