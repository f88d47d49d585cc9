/* @launch
{"launches": [
  {"kernel": "row_sum", "global": [64], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}, {"int": 1024}]}]}
*/
// Optimized row sum for row_sum.py (64 x 1024): one work-item per row, reading it as float16
// vectors into 16 independent partial sums that are folded at the end.
__kernel void row_sum(__global const float* x, __global float* y, int cols) {
  __global const float* row = x + get_global_id(0) * cols;
  float16 acc = 0.0f;
  for (int c = 0; c < cols / 16; ++c) acc += vload16(c, row);
  const float8 a8 = acc.lo + acc.hi;
  const float4 a4 = a8.lo + a8.hi;
  const float2 a2 = a4.lo + a4.hi;
  y[get_global_id(0)] = a2.x + a2.y;
}
