/* @launch
{"launches": [
  {"kernel": "matmul", "global": [64, 64], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "input1"}, {"buffer": "output0"}, {"int": 64},
            {"int": 64}]}]}
*/
// Naive OpenCL baseline for matmul.py (C = A @ B, 64 x 64 x 64): one work-item per element of C,
// dimension 0 the column, dimension 1 the row.
__kernel void matmul(__global const float* a, __global const float* b, __global float* c, int k,
                     int n) {
  const size_t col = get_global_id(0);
  const size_t row = get_global_id(1);
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += a[row * k + i] * b[i * n + col];
  c[row * n + col] = sum;
}
