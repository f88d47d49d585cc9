/* KernelBench level1/21_Sigmoid in plain C: y = 1 / (1 + exp(-x)) elementwise over any shape.
 * The scalar and autovectorized baseline of the RVV backend. */
#include <math.h>

#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  long n = 1;
  for (int d = 0; d < inputs[0].rank; ++d) n *= inputs[0].sizes[d];
  const float* x = inputs[0].data;
  float* y = outputs[0].data;
  for (long i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
