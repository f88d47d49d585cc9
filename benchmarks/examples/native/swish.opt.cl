/* @launch
{"launches": [
  {"kernel": "swish", "global": [1024], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]}
*/
// Optimized swish for swish.py (16384 floats): each work-item handles 16 consecutive elements
// with float16 vector loads, stores and exp.
__kernel void swish(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  const float16 v = vload16(i, x);
  vstore16(v / (1.0f + exp(-v)), i, y);
}
