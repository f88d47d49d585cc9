/* Sigmoid for KernelBench level1/21_Sigmoid with RVV intrinsics: a vector expf (range
 * reduction to [-ln2/2, ln2/2], degree-5 polynomial, exponent bits for 2^n), then
 * 1 / (1 + exp(-x)), strip-mined over the flattened tensor. MBLAST_LMUL picks the register group
 * size. */
#include <riscv_vector.h>

#ifndef MBLAST_LMUL
#define MBLAST_LMUL 4
#endif
#include "mblast_rvv.h"

#define VF mblast_vfloat32_t

static inline VF vexp(VF x, size_t vl) {
  x = MBLAST_M(vfmin_vf_f32m)(MBLAST_M(vfmax_vf_f32m)(x, -87.0f, vl), 88.0f, vl);
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
  long n = 1;
  for (int d = 0; d < inputs[0].rank; ++d) n *= inputs[0].sizes[d];
  const float* x = inputs[0].data;
  float* y = outputs[0].data;
  for (long i = 0; i < n;) {
    const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(n - i));
    const VF e = vexp(MBLAST_M(vfneg_v_f32m)(MBLAST_M(vle32_v_f32m)(x + i, vl), vl), vl);
    const VF denominator = MBLAST_M(vfadd_vf_f32m)(e, 1.0f, vl);
    MBLAST_M(vse32_v_f32m)(y + i, MBLAST_M(vfrdiv_vf_f32m)(denominator, 1.0f, vl), vl);
    i += (long)vl;
  }
}
