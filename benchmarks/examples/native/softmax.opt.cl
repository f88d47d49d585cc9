/* @launch
{"launches": [
  {"kernel": "softmax", "global": [32], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}, {"int": 512}]}]}
*/
// Optimized softmax for softmax.py (32 x 512, over dim 1): one work-item per row working on
// float16 vectors; the exponentials are computed once, stored, and scaled in place.
float fold_max(float16 v) {
  const float8 a = fmax(v.lo, v.hi);
  const float4 b = fmax(a.lo, a.hi);
  const float2 c = fmax(b.lo, b.hi);
  return fmax(c.x, c.y);
}

float fold_sum(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 c = b.lo + b.hi;
  return c.x + c.y;
}

__kernel void softmax(__global const float* x, __global float* y, int cols) {
  __global const float* in = x + get_global_id(0) * cols;
  __global float* out = y + get_global_id(0) * cols;
  const int vectors = cols / 16;
  float16 max16 = -INFINITY;
  for (int c = 0; c < vectors; ++c) max16 = fmax(max16, vload16(c, in));
  const float max_value = fold_max(max16);
  float16 sum16 = 0.0f;
  for (int c = 0; c < vectors; ++c) {
    const float16 e = exp(vload16(c, in) - max_value);
    vstore16(e, c, out);
    sum16 += e;
  }
  const float scale = 1.0f / fold_sum(sum16);
  for (int c = 0; c < vectors; ++c) vstore16(vload16(c, out) * scale, c, out);
}
