/* row_sum.py in plain C: y[r] = sum of row r of x. The scalar and autovectorized baseline of
 * the RVV backend. */
#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* x = inputs[0].data;
  float* y = outputs[0].data;
  const long rows = inputs[0].sizes[0], cols = inputs[0].sizes[1];
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
