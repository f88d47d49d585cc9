/* @launch
{"launches": [
  {"kernel": "softmax", "global": [16], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "output0"}, {"int": 1536}]}]}
*/
// Softmax over dim 1 for KernelBench level1/23_Softmax at --shrink 65536 (16 x 1536): one
// work-item per row on float16 vectors (cols is a multiple of 16); the running maximum and sum
// stay in vector registers until one fold each, the exponentials are stored once and scaled in
// place.
float fold_max16(float16 v) {
  const float8 a = fmax(v.lo, v.hi);
  const float4 b = fmax(a.lo, a.hi);
  const float2 c = fmax(b.lo, b.hi);
  return fmax(c.x, c.y);
}

float fold_sum16(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 c = b.lo + b.hi;
  return c.x + c.y;
}

__kernel void softmax(__global const float* x, __global float* y, int cols) {
  __global const float* in = x + get_global_id(0) * cols;
  __global float* out = y + get_global_id(0) * cols;
  const int vectors = cols / 16;
  float16 m = vload16(0, in);
  for (int c = 1; c < vectors; ++c) m = fmax(m, vload16(c, in));
  const float row_max = fold_max16(m);
  float16 s = 0.0f;
  for (int c = 0; c < vectors; ++c) {
    const float16 e = exp(vload16(c, in) - row_max);
    vstore16(e, c, out);
    s += e;
  }
  const float scale = 1.0f / fold_sum16(s);
  for (int c = 0; c < vectors; ++c) vstore16(vload16(c, out) * scale, c, out);
}
