/* @launch
{"launches": [
  {"kernel": "row_sum", "global": [64], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}, {"int": 1024}]}]}
*/
// Naive OpenCL baseline for row_sum.py (64 x 1024): one work-item sums one row.
__kernel void row_sum(__global const float* x, __global float* y, int cols) {
  const size_t row = get_global_id(0);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += x[row * cols + c];
  y[row] = sum;
}
