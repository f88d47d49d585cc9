/* conv1d.py in plain C: y[b][o][t] = bias[o] + sum over c, k of w[o][c][k] * x[b][c][t + k]
 * (stride 1, no padding). Inputs: x, then conv.weight and conv.bias. The scalar and
 * autovectorized baseline of the RVV backend. */
#include "mblast_rvv.h"

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const float* x = inputs[0].data;
  const float* w = inputs[1].data;
  const float* bias = inputs[2].data;
  float* y = outputs[0].data;
  const long batch = inputs[0].sizes[0], in_ch = inputs[0].sizes[1], length = inputs[0].sizes[2];
  const long out_ch = inputs[1].sizes[0], kernel = inputs[1].sizes[2];
  const long out_len = length - kernel + 1;
  for (long b = 0; b < batch; ++b) {
    for (long o = 0; o < out_ch; ++o) {
      float* out = y + (b * out_ch + o) * out_len;
      for (long t = 0; t < out_len; ++t) out[t] = bias[o];
      for (long c = 0; c < in_ch; ++c) {
        const float* in = x + (b * in_ch + c) * length;
        for (long k = 0; k < kernel; ++k) {
          const float weight = w[(o * in_ch + c) * kernel + k];
          for (long t = 0; t < out_len; ++t) out[t] += weight * in[t + k];
        }
      }
    }
  }
}
