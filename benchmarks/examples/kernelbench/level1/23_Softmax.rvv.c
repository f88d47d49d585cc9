/* Softmax over dim 1 for KernelBench level1/23_Softmax with RVV intrinsics. Per row: the
 * maximum and the sum of exponentials are accumulated element-wise in registers over full
 * register groups and reduced once (the tail strip folds in through one reduction each); the
 * exponentials (range reduction, degree-5 polynomial, exponent bits) are stored in the first
 * sum pass and scaled in place. MBLAST_LMUL picks the register group size. */
#include <riscv_vector.h>

#ifndef MBLAST_LMUL
#define MBLAST_LMUL 4
#endif
#include "mblast_rvv.h"

#define VF mblast_vfloat32_t

static inline VF vexp(VF x, size_t vl) {
  x = MBLAST_M(vfmax_vf_f32m)(x, -87.0f, vl); /* x <= 0 here: only underflow needs a clamp */
  const MBLAST_MS(vint32m, _t) n =
      MBLAST_M(vfcvt_x_f_v_i32m)(MBLAST_M(vfmul_vf_f32m)(x, 1.44269504f, vl), vl);
  const VF nf = MBLAST_M(vfcvt_f_x_v_f32m)(n, vl);
  VF r = MBLAST_M(vfnmsac_vf_f32m)(x, 0.693359375f, nf, vl);
  r = MBLAST_M(vfnmsac_vf_f32m)(r, -2.12194440e-4f, nf, vl);
  VF p = MBLAST_M(vfmv_v_f_f32m)(1.9875691500e-4f, vl);
  p = MBLAST_M(vfadd_vf_f32m)(MBLAST_M(vfmul_vv_f32m)(p, r, vl), 1.3981999507e-3f, vl);
  p = MBLAST_M(vfadd_vf_f32m)(MBLAST_M(vfmul_vv_f32m)(p, r, vl), 8.3334519073e-3f, vl);
  p = MBLAST_M(vfadd_vf_f32m)(MBLAST_M(vfmul_vv_f32m)(p, r, vl), 4.1665795894e-2f, vl);
  p = MBLAST_M(vfadd_vf_f32m)(MBLAST_M(vfmul_vv_f32m)(p, r, vl), 1.6666665459e-1f, vl);
  p = MBLAST_M(vfadd_vf_f32m)(MBLAST_M(vfmul_vv_f32m)(p, r, vl), 5.0000001201e-1f, vl);
  /* exp(r) = 1 + r + r^2 * p */
  const VF r2 = MBLAST_M(vfmul_vv_f32m)(r, r, vl);
  p = MBLAST_M(vfadd_vf_f32m)(MBLAST_M(vfmacc_vv_f32m)(r, r2, p, vl), 1.0f, vl);
  const MBLAST_MS(vint32m, _t) bits =
      MBLAST_M(vsll_vx_i32m)(MBLAST_M(vadd_vx_i32m)(n, 127, vl), 23, vl);
  return MBLAST_M(vfmul_vv_f32m)(p, MBLAST_MS(vreinterpret_v_i32m, MBLAST_M(_f32m))(bits), vl);
}

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const long rows = inputs[0].sizes[0], cols = inputs[0].sizes[1];
  const size_t vlmax = MBLAST_M(vsetvlmax_e32m)();
  const long full = cols - cols % (long)vlmax;
  const size_t tail = (size_t)(cols - full);
  const vfloat32m1_t zero = vfmv_v_f_f32m1(0.0f, vsetvlmax_e32m1());
  for (long r = 0; r < rows; ++r) {
    const float* x = inputs[0].data + r * cols;
    float* y = outputs[0].data + r * cols;
    vfloat32m1_t max = vfmv_v_f_f32m1(x[0], vsetvlmax_e32m1());
    if (full > 0) {
      VF acc = MBLAST_M(vle32_v_f32m)(x, vlmax);
      for (long c = (long)vlmax; c < full; c += (long)vlmax) {
        acc = MBLAST_M(vfmax_vv_f32m)(acc, MBLAST_M(vle32_v_f32m)(x + c, vlmax), vlmax);
      }
      max = MBLAST_MS(vfredmax_vs_f32m, _f32m1)(max, acc, max, vlmax);
    }
    if (tail) {
      max = MBLAST_MS(vfredmax_vs_f32m, _f32m1)(max, MBLAST_M(vle32_v_f32m)(x + full, tail), max,
                                                tail);
    }
    const float row_max = vfmv_f_s_f32m1_f32(max);
    vfloat32m1_t sum = zero;
    if (full > 0) {
      VF acc = MBLAST_M(vfmv_v_f_f32m)(0.0f, vlmax);
      for (long c = 0; c < full; c += (long)vlmax) {
        const VF e = vexp(
            MBLAST_M(vfsub_vf_f32m)(MBLAST_M(vle32_v_f32m)(x + c, vlmax), row_max, vlmax), vlmax);
        MBLAST_M(vse32_v_f32m)(y + c, e, vlmax);
        acc = MBLAST_M(vfadd_vv_f32m)(acc, e, vlmax);
      }
      sum = MBLAST_MS(vfredusum_vs_f32m, _f32m1)(zero, acc, zero, vlmax);
    }
    if (tail) {
      const VF e = vexp(
          MBLAST_M(vfsub_vf_f32m)(MBLAST_M(vle32_v_f32m)(x + full, tail), row_max, tail), tail);
      MBLAST_M(vse32_v_f32m)(y + full, e, tail);
      sum = MBLAST_MS(vfredusum_vs_f32m, _f32m1)(sum, e, sum, tail);
    }
    const float scale = 1.0f / vfmv_f_s_f32m1_f32(sum);
    for (long c = 0; c < cols;) {
      const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(cols - c));
      MBLAST_M(vse32_v_f32m)
      (y + c, MBLAST_M(vfmul_vf_f32m)(MBLAST_M(vle32_v_f32m)(y + c, vl), scale, vl), vl);
      c += (long)vl;
    }
  }
}
