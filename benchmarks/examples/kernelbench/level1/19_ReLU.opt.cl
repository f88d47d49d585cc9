/* @launch
{"launches": [
  {"kernel": "relu", "global": [384], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]}
*/
// ReLU for KernelBench level1/19_ReLU at --shrink 65536 (16 x 1536 floats): each work-item
// handles 64 consecutive elements as four float16 loads, fmax and stores.
__kernel void relu(__global const float* x, __global float* y) {
  const size_t base = get_global_id(0) * 4;
  for (int v = 0; v < 4; ++v) vstore16(fmax(vload16(base + v, x), 0.0f), base + v, y);
}
