/* KernelBench level1/23_Softmax in plain C: softmax over dim 1 of a (rows, cols) matrix,
 * max-subtracted. The scalar and autovectorized baseline of the RVV backend. */
#include <math.h>

#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const long rows = inputs[0].sizes[0], cols = inputs[0].sizes[1];
  for (long r = 0; r < rows; ++r) {
    const float* x = inputs[0].data + r * cols;
    float* y = outputs[0].data + r * cols;
    float max = x[0];
    for (long c = 1; c < cols; ++c) max = x[c] > max ? x[c] : max;
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) {
      y[c] = expf(x[c] - max);
      sum += y[c];
    }
    const float scale = 1.0f / sum;
    for (long c = 0; c < cols; ++c) y[c] *= scale;
  }
}
