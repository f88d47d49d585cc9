/* @launch
{"launches": [
  {"kernel": "swish", "global": [16384], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]}
*/
// Naive OpenCL baseline for swish.py: one work-item per element.
__kernel void swish(__global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  const float v = x[i];
  y[i] = v / (1.0f + exp(-v));
}
