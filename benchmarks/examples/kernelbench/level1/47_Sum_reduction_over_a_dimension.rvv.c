/* Sum over dim 1 for KernelBench level1/47_Sum_reduction_over_a_dimension with RVV intrinsics:
 * x is (b, m, n) and the reduced dim is not the contiguous one, so each strip of n is summed
 * element-wise down the m rows in a register group (contiguous loads, no reductions) and
 * stored once. MBLAST_LMUL picks the register group size. */
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
  const long b = inputs[0].sizes[0], m = inputs[0].sizes[1], n = inputs[0].sizes[2];
  for (long i = 0; i < b; ++i) {
    const float* x = inputs[0].data + i * m * n;
    float* y = outputs[0].data + i * n;
    for (long k = 0; k < n;) {
      const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(n - k));
      VF acc = MBLAST_M(vle32_v_f32m)(x + k, vl);
      for (long j = 1; j < m; ++j) {
        acc = MBLAST_M(vfadd_vv_f32m)(acc, MBLAST_M(vle32_v_f32m)(x + j * n + k, vl), vl);
      }
      MBLAST_M(vse32_v_f32m)(y + k, acc, vl);
      k += (long)vl;
    }
  }
}
