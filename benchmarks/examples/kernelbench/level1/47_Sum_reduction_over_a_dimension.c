/* KernelBench level1/47_Sum_reduction_over_a_dimension in plain C: x of shape (b, m, n) summed
 * over dim 1 (the problem's reduce_dim) into (b, 1, n). The scalar and autovectorized baseline
 * of the RVV backend. */
#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const long b = inputs[0].sizes[0], m = inputs[0].sizes[1], n = inputs[0].sizes[2];
  for (long i = 0; i < b; ++i) {
    const float* x = inputs[0].data + i * m * n;
    float* y = outputs[0].data + i * n;
    for (long k = 0; k < n; ++k) {
      float sum = 0.0f;
      for (long j = 0; j < m; ++j) sum += x[j * n + k];
      y[k] = sum;
    }
  }
}
