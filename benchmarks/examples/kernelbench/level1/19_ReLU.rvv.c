/* ReLU for KernelBench level1/19_ReLU with RVV intrinsics: strip-mined vfmax against 0 over
 * the flattened tensor. MBLAST_LMUL picks the register group size. */
#include <riscv_vector.h>

#ifndef MBLAST_LMUL
#define MBLAST_LMUL 8
#endif
#include "mblast_rvv.h"

#define VF mblast_vfloat32_t

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  long n = 1;
  for (int d = 0; d < inputs[0].rank; ++d) n *= inputs[0].sizes[d];
  const float* x = inputs[0].data;
  float* y = outputs[0].data;
  for (long i = 0; i < n;) {
    const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(n - i));
    const VF v = MBLAST_M(vle32_v_f32m)(x + i, vl);
    MBLAST_M(vse32_v_f32m)(y + i, MBLAST_M(vfmax_vf_f32m)(v, 0.0f, vl), vl);
    i += (long)vl;
  }
}
