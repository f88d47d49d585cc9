/* row_sum with RVV intrinsics: each row is summed with element-wise vector adds over full
 * register groups, one unordered reduction at the end, and the tail folded in by a second
 * reduction. MBLAST_LMUL picks the register group size. */
#include <riscv_vector.h>

/* Defaults: the LMUL / unroll sweep's best at VLEN=256, DLEN=128. */
#ifndef MBLAST_LMUL
#define MBLAST_LMUL 8
#endif
#include "mblast_rvv.h"

#define VF mblast_vfloat32_t

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const long rows = inputs[0].sizes[0], cols = inputs[0].sizes[1];
  const size_t vlmax = MBLAST_M(vsetvlmax_e32m)();
  const vfloat32m1_t zero = vfmv_v_f_f32m1(0.0f, vsetvlmax_e32m1());
  for (long r = 0; r < rows; ++r) {
    const float* x = inputs[0].data + r * cols;
    VF acc = MBLAST_M(vfmv_v_f_f32m)(0.0f, vlmax);
    long c = 0;
    for (; c + (long)vlmax <= cols; c += (long)vlmax) {
      acc = MBLAST_M(vfadd_vv_f32m)(acc, MBLAST_M(vle32_v_f32m)(x + c, vlmax), vlmax);
    }
    vfloat32m1_t sum = MBLAST_MS(vfredusum_vs_f32m, _f32m1)(zero, acc, zero, vlmax);
    if (c < cols) {
      const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(cols - c));
      sum = MBLAST_MS(vfredusum_vs_f32m, _f32m1)(sum, MBLAST_M(vle32_v_f32m)(x + c, vl), sum, vl);
    }
    outputs[0].data[r] = vfmv_f_s_f32m1_f32(sum);
  }
}
