/* @launch
{"launches": [
  {"kernel": "sum_dim1", "global": [8, 4], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}, {"int": 128}, {"int": 127}]}]}
*/
// Sum over dim 1 for KernelBench level1/47_Sum_reduction_over_a_dimension at --shrink 65536
// (x is 4 x 128 x 127, y is 4 x 1 x 127): work-item (s, i) sums a strip of 16 columns of
// batch i down the 128 rows in one float16 accumulator (contiguous loads); the last, shorter
// strip is summed column by column.
__kernel void sum_dim1(__global const float* x, __global float* y, int m, int n) {
  const int first = (int)get_global_id(0) * 16;
  __global const float* batch = x + get_global_id(1) * m * n;
  __global float* out = y + get_global_id(1) * n;
  if (first + 16 <= n) {
    float16 acc = vload16(0, batch + first);
    for (int j = 1; j < m; ++j) acc += vload16(0, batch + j * n + first);
    vstore16(acc, 0, out + first);
    return;
  }
  for (int k = first; k < n; ++k) {
    float acc = 0.0f;
    for (int j = 0; j < m; ++j) acc += batch[j * n + k];
    out[k] = acc;
  }
}
