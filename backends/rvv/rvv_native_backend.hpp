#pragma once
// The RVV backend behind mblast's NativeBackend interface, for `mblast eval` and the loop.
//   run        run_rvv_candidate at the vlen option (cost model DLEN 128)
//   baselines  "scalar_c_O2" (primary) and "autovec_c_O3": the problem's plain C twin <stem>.c
//              beside it, when there is one and it is correct, priced like a candidate
//   signature  rvv_signature.hpp: vector and memory measures and the cost model's speed of light
//   built-in   "lmul_choice" and "unroll_choice" (rvv_sweep.hpp)
//   assemble   one .c file
#include <memory>

#include "mblast/eval_options.hpp"
#include "native/native_backend.hpp"

namespace mblast::rvv {

std::unique_ptr<NativeBackend> make_rvv_backend(const EvalOptions& options);

}  // namespace mblast::rvv
