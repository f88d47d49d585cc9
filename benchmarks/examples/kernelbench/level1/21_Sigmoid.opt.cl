/* @launch
{"launches": [
  {"kernel": "sigmoid", "global": [384], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]}
*/
// Sigmoid for KernelBench level1/21_Sigmoid at --shrink 65536 (16 x 1536 floats): each
// work-item handles 64 consecutive elements as four float16 vectors, 1 / (1 + exp(-x)).
__kernel void sigmoid(__global const float* x, __global float* y) {
  const size_t base = get_global_id(0) * 4;
  for (int v = 0; v < 4; ++v) {
    const float16 e = exp(-vload16(base + v, x));
    vstore16(1.0f / (1.0f + e), base + v, y);
  }
}
