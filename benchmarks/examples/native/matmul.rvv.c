/* matmul with RVV intrinsics: a strip of c's columns (one register group) is accumulated with
 * vfmacc over k for MBLAST_UNROLL (1, 2 or 4) rows at once, so that each row of b loaded from
 * memory feeds several rows of c. MBLAST_LMUL picks the register group size. */
#include <riscv_vector.h>

/* Defaults: the LMUL / unroll sweep's best at VLEN=256, DLEN=128. */
#ifndef MBLAST_LMUL
#define MBLAST_LMUL 4
#endif
#ifndef MBLAST_UNROLL
#define MBLAST_UNROLL 4
#endif
#include "mblast_rvv.h"

#if MBLAST_UNROLL != 1 && MBLAST_UNROLL != 2 && MBLAST_UNROLL != 4
#error "MBLAST_UNROLL must be 1, 2 or 4"
#endif
#define VF mblast_vfloat32_t
#define ROWS MBLAST_UNROLL
#define FMACC MBLAST_M(vfmacc_vf_f32m)

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* a = inputs[0].data;
  const float* b = inputs[1].data;
  float* c = outputs[0].data;
  const long m = inputs[0].sizes[0], k = inputs[0].sizes[1], n = inputs[1].sizes[1];
  for (long j = 0; j < n;) {
    const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(n - j));
    const VF zero = MBLAST_M(vfmv_v_f_f32m)(0.0f, vl);
    long i = 0;
    for (; i + ROWS <= m; i += ROWS) {
      VF acc0 = zero, acc1 = zero, acc2 = zero, acc3 = zero;
      const float* a_rows = a + i * k;
      for (long p = 0; p < k; ++p) {
        const VF b_row = MBLAST_M(vle32_v_f32m)(b + p * n + j, vl);
        acc0 = FMACC(acc0, a_rows[p], b_row, vl);
        if (ROWS > 1) acc1 = FMACC(acc1, a_rows[k + p], b_row, vl);
        if (ROWS > 2) acc2 = FMACC(acc2, a_rows[2 * k + p], b_row, vl);
        if (ROWS > 3) acc3 = FMACC(acc3, a_rows[3 * k + p], b_row, vl);
      }
      float* c_rows = c + i * n + j;
      MBLAST_M(vse32_v_f32m)(c_rows, acc0, vl);
      if (ROWS > 1) MBLAST_M(vse32_v_f32m)(c_rows + n, acc1, vl);
      if (ROWS > 2) MBLAST_M(vse32_v_f32m)(c_rows + 2 * n, acc2, vl);
      if (ROWS > 3) MBLAST_M(vse32_v_f32m)(c_rows + 3 * n, acc3, vl);
    }
    for (; i < m; ++i) {
      VF acc = zero;
      for (long p = 0; p < k; ++p) {
        acc = FMACC(acc, a[i * k + p], MBLAST_M(vle32_v_f32m)(b + p * n + j, vl), vl);
      }
      MBLAST_M(vse32_v_f32m)(c + i * n + j, acc, vl);
    }
    j += (long)vl;
  }
}
