/* swish.py in plain C: y = x * sigmoid(x) over a vector. The scalar and autovectorized
 * baseline of the RVV backend. */
#include <math.h>

#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* x = inputs[0].data;
  float* y = outputs[0].data;
  const long n = inputs[0].sizes[0];
  for (long i = 0; i < n; ++i) y[i] = x[i] / (1.0f + expf(-x[i]));
}
