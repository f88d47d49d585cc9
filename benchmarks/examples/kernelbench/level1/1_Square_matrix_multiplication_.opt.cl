/* @launch
{"launches": [
  {"kernel": "matmul", "global": [256], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "input1"}, {"buffer": "output0"}]}]}
*/
// Square matmul for KernelBench level1/1_Square_matrix_multiplication_ at --shrink 65536
// (128 x 128 x 128): register blocking. Work-item w computes half a row of C (row w / 2, 64
// columns) in four float16 accumulators, so each element of A is loaded once per half row and
// each row of B streams through as four contiguous float16 loads.
#define N 128

__kernel void matmul(__global const float* a, __global const float* b, __global float* c) {
  const size_t row = get_global_id(0) / 2;
  const size_t col = (get_global_id(0) % 2) * 64;
  __global const float* a_row = a + row * N;
  float16 c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
  for (int k = 0; k < N; ++k) {
    const float16 a_k = (float16)(a_row[k]);
    __global const float* b_row = b + k * N + col;
    c0 = fma(a_k, vload16(0, b_row), c0);
    c1 = fma(a_k, vload16(1, b_row), c1);
    c2 = fma(a_k, vload16(2, b_row), c2);
    c3 = fma(a_k, vload16(3, b_row), c3);
  }
  __global float* c_row = c + row * N + col;
  vstore16(c0, 0, c_row);
  vstore16(c1, 1, c_row);
  vstore16(c2, 2, c_row);
  vstore16(c3, 3, c_row);
}
