/* Square matmul for KernelBench level1/1_Square_matrix_multiplication_ with RVV intrinsics:
 * a 4-row by 2-strip block of C (eight register groups at LMUL 2) is accumulated with vfmacc
 * over k, so each pair of B loads feeds eight multiply-adds and each scalar of A two. Rows and
 * columns left over fall back to one row and one strip at a time. */
#include <riscv_vector.h>

#include "mblast_rvv.h"

static void one_row_strip(const float* a, const float* b, float* c, long n, long i, long j,
                          size_t vl) {
  vfloat32m2_t acc = vfmv_v_f_f32m2(0.0f, vl);
  for (long p = 0; p < n; ++p)
    acc = vfmacc_vf_f32m2(acc, a[i * n + p], vle32_v_f32m2(b + p * n + j, vl), vl);
  vse32_v_f32m2(c + i * n + j, acc, vl);
}

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* a = inputs[0].data;
  const float* b = inputs[1].data;
  float* c = outputs[0].data;
  const long n = inputs[0].sizes[0];
  const long vlmax = (long)vsetvlmax_e32m2();
  long j = 0;
  for (; j + 2 * vlmax <= n; j += 2 * vlmax) {
    const size_t vl = (size_t)vlmax;
    long i = 0;
    for (; i + 4 <= n; i += 4) {
      vfloat32m2_t c00 = vfmv_v_f_f32m2(0.0f, vl), c01 = c00, c10 = c00, c11 = c00;
      vfloat32m2_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
      const float* a0 = a + i * n;
      for (long p = 0; p < n; ++p) {
        const vfloat32m2_t b0 = vle32_v_f32m2(b + p * n + j, vl);
        const vfloat32m2_t b1 = vle32_v_f32m2(b + p * n + j + vlmax, vl);
        const float x0 = a0[p], x1 = a0[n + p], x2 = a0[2 * n + p], x3 = a0[3 * n + p];
        c00 = vfmacc_vf_f32m2(c00, x0, b0, vl);
        c01 = vfmacc_vf_f32m2(c01, x0, b1, vl);
        c10 = vfmacc_vf_f32m2(c10, x1, b0, vl);
        c11 = vfmacc_vf_f32m2(c11, x1, b1, vl);
        c20 = vfmacc_vf_f32m2(c20, x2, b0, vl);
        c21 = vfmacc_vf_f32m2(c21, x2, b1, vl);
        c30 = vfmacc_vf_f32m2(c30, x3, b0, vl);
        c31 = vfmacc_vf_f32m2(c31, x3, b1, vl);
      }
      float* c0 = c + i * n + j;
      vse32_v_f32m2(c0, c00, vl);
      vse32_v_f32m2(c0 + vlmax, c01, vl);
      vse32_v_f32m2(c0 + n, c10, vl);
      vse32_v_f32m2(c0 + n + vlmax, c11, vl);
      vse32_v_f32m2(c0 + 2 * n, c20, vl);
      vse32_v_f32m2(c0 + 2 * n + vlmax, c21, vl);
      vse32_v_f32m2(c0 + 3 * n, c30, vl);
      vse32_v_f32m2(c0 + 3 * n + vlmax, c31, vl);
    }
    for (; i < n; ++i) {
      one_row_strip(a, b, c, n, i, j, vl);
      one_row_strip(a, b, c, n, i, j + vlmax, vl);
    }
  }
  while (j < n) {
    const size_t vl = vsetvl_e32m2((size_t)(n - j));
    for (long i = 0; i < n; ++i) one_row_strip(a, b, c, n, i, j, vl);
    j += (long)vl;
  }
}
