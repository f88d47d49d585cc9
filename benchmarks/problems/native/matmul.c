/* matmul.py in plain C: c = a @ b, row by row (i-k-j order, so each row of c is a running sum of
 * scaled rows of b). The scalar and autovectorized baseline of the RVV backend. */
#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* a = inputs[0].data;
  const float* b = inputs[1].data;
  float* c = outputs[0].data;
  const long m = inputs[0].sizes[0], k = inputs[0].sizes[1], n = inputs[1].sizes[1];
  for (long i = 0; i < m; ++i) {
    float* row = c + i * n;
    for (long j = 0; j < n; ++j) row[j] = 0.0f;
    for (long p = 0; p < k; ++p) {
      const float scale = a[i * k + p];
      const float* b_row = b + p * n;
      for (long j = 0; j < n; ++j) row[j] += scale * b_row[j];
    }
  }
}
