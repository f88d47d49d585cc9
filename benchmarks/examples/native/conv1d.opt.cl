/* @launch
{"launches": [
  {"kernel": "conv1d", "global": [16, 4, 2], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "conv.weight"}, {"buffer": "conv.bias"},
            {"buffer": "output0"}]}]}
*/
// Optimized conv1d for conv1d.py (x: 2 x 8 x 256, weight: 16 x 8 x 5, output 2 x 16 x 252).
// Each work-item computes 16 neighbouring output positions (one float16) for 4 output channels:
// every float16 load of the input feeds 4 fused multiply-adds, and the vectors run along the
// positions, where the data is contiguous. Work-item (block, channel group, batch); the sizes are
// compiled in so that the tap loop unrolls. 252 is not a multiple of 16: the last block starts
// at 236 and stores only the positions no other block wrote.
#define IN_CHANNELS 8
#define OUT_CHANNELS 16
#define LENGTH 256
#define TAPS 5
#define OUT_LENGTH 252
#define LAST_START (OUT_LENGTH - 16)

void store_block(float16 value, int block, __global float* out) {
  if (block * 16 <= LAST_START) {
    vstore16(value, 0, out + block * 16);
    return;
  }
  float lanes[16];
  vstore16(value, 0, lanes);
  for (int j = block * 16 - LAST_START; j < 16; ++j) out[LAST_START + j] = lanes[j];
}

__kernel void conv1d(__global const float* x, __global const float* weight,
                     __global const float* bias, __global float* y) {
  const int block = get_global_id(0);
  const int channel = get_global_id(1) * 4;
  const int batch = get_global_id(2);
  const int start = min(block * 16, LAST_START);
  float16 s0 = bias[channel], s1 = bias[channel + 1], s2 = bias[channel + 2],
          s3 = bias[channel + 3];
  __global const float* w = weight + channel * IN_CHANNELS * TAPS;
  for (int ci = 0; ci < IN_CHANNELS; ++ci) {
    __global const float* in = x + (batch * IN_CHANNELS + ci) * LENGTH + start;
#pragma unroll
    for (int k = 0; k < TAPS; ++k) {
      const float16 v = vload16(0, in + k);
      const int tap = ci * TAPS + k;
      s0 = fma((float16)(w[tap]), v, s0);
      s1 = fma((float16)(w[IN_CHANNELS * TAPS + tap]), v, s1);
      s2 = fma((float16)(w[2 * IN_CHANNELS * TAPS + tap]), v, s2);
      s3 = fma((float16)(w[3 * IN_CHANNELS * TAPS + tap]), v, s3);
    }
  }
  __global float* out = y + (batch * OUT_CHANNELS + channel) * OUT_LENGTH;
  store_block(s0, block, out);
  store_block(s1, block, out + OUT_LENGTH);
  store_block(s2, block, out + 2 * OUT_LENGTH);
  store_block(s3, block, out + 3 * OUT_LENGTH);
}
