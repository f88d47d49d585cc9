/* softmax over rows with RVV intrinsics: a vector max reduction, a vector expf of x - max
 * (range reduction to [-ln2/2, ln2/2], degree-5 polynomial, exponent bits for 2^n) stored and
 * summed in the same pass, then one scaling pass. MBLAST_LMUL picks the register group size. */
#include <riscv_vector.h>

/* Defaults: the LMUL / unroll sweep's best at VLEN=256, DLEN=128. */
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
  const vfloat32m1_t zero = vfmv_v_f_f32m1(0.0f, vsetvlmax_e32m1());
  for (long r = 0; r < rows; ++r) {
    const float* x = inputs[0].data + r * cols;
    float* y = outputs[0].data + r * cols;
    vfloat32m1_t max = vfmv_v_f_f32m1(x[0], vsetvlmax_e32m1());
    for (long c = 0; c < cols;) {
      const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(cols - c));
      max = MBLAST_MS(vfredmax_vs_f32m, _f32m1)(max, MBLAST_M(vle32_v_f32m)(x + c, vl), max, vl);
      c += (long)vl;
    }
    const float row_max = vfmv_f_s_f32m1_f32(max);
    vfloat32m1_t sum = zero;
    for (long c = 0; c < cols;) {
      const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(cols - c));
      const VF v = MBLAST_M(vfsub_vf_f32m)(MBLAST_M(vle32_v_f32m)(x + c, vl), row_max, vl);
      const VF e = vexp(v, vl);
      MBLAST_M(vse32_v_f32m)(y + c, e, vl);
      sum = MBLAST_MS(vfredusum_vs_f32m, _f32m1)(sum, e, sum, vl);
      c += (long)vl;
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
