/* KernelBench level1/1_Square_matrix_multiplication_ in plain C: C = A @ B for square (n, n)
 * matrices, the textbook i-k-j loop order. The scalar and autovectorized baseline of the RVV
 * backend. */
#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* a = inputs[0].data;
  const float* b = inputs[1].data;
  float* c = outputs[0].data;
  const long n = inputs[0].sizes[0];
  for (long i = 0; i < n; ++i) {
    for (long j = 0; j < n; ++j) c[i * n + j] = 0.0f;
    for (long k = 0; k < n; ++k) {
      const float a_ik = a[i * n + k];
      for (long j = 0; j < n; ++j) c[i * n + j] += a_ik * b[k * n + j];
    }
  }
}
