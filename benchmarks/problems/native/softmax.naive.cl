/* @launch
{"launches": [
  {"kernel": "softmax", "global": [32], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}, {"int": 512}]}]}
*/
// Naive OpenCL baseline for softmax.py (32 x 512, over dim 1): one work-item per row, three
// passes (max, sum of exponentials, normalize).
__kernel void softmax(__global const float* x, __global float* y, int cols) {
  __global const float* in = x + get_global_id(0) * cols;
  __global float* out = y + get_global_id(0) * cols;
  float max_value = -INFINITY;
  for (int c = 0; c < cols; ++c) max_value = fmax(max_value, in[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += exp(in[c] - max_value);
  for (int c = 0; c < cols; ++c) out[c] = exp(in[c] - max_value) / sum;
}
