/* conv1d with RVV intrinsics: a strip of output positions (one register group) is accumulated
 * with vfmacc over input channels and taps for MBLAST_UNROLL (1, 2 or 4) output channels at
 * once, so that each shifted input strip loaded from memory feeds several output channels.
 * MBLAST_LMUL picks the register group size. */
#include <riscv_vector.h>

/* Defaults: the LMUL / unroll sweep's best at VLEN=256, DLEN=128. */
#ifndef MBLAST_LMUL
#define MBLAST_LMUL 4
#endif
#ifndef MBLAST_UNROLL
#define MBLAST_UNROLL 4
#endif
#include "mblast_rvv.h"

#if MBLAST_UNROLL != 1 && MBLAST_UNROLL != 2 && MBLAST_UNROLL != 4
#error "MBLAST_UNROLL must be 1, 2 or 4"
#endif
#define VF mblast_vfloat32_t
#define FMACC MBLAST_M(vfmacc_vf_f32m)

/* Output channels o .. o + channels - 1 (channels <= MBLAST_UNROLL) of positions t .. t + vl. */
static inline void channel_block(const float* x, const float* w, const float* bias, float* y,
                                 long in_ch, long length, long kernel, long out_len, long o,
                                 long channels, long t, size_t vl) {
  const long stride = in_ch * kernel; /* between the weights of consecutive output channels */
  VF acc0 = MBLAST_M(vfmv_v_f_f32m)(bias[o], vl);
  VF acc1 = MBLAST_M(vfmv_v_f_f32m)(channels > 1 ? bias[o + 1] : 0.0f, vl);
  VF acc2 = MBLAST_M(vfmv_v_f_f32m)(channels > 2 ? bias[o + 2] : 0.0f, vl);
  VF acc3 = MBLAST_M(vfmv_v_f_f32m)(channels > 3 ? bias[o + 3] : 0.0f, vl);
  for (long c = 0; c < in_ch; ++c) {
    const float* in = x + c * length + t;
    const float* taps = w + (o * in_ch + c) * kernel;
    for (long q = 0; q < kernel; ++q) {
      const VF strip = MBLAST_M(vle32_v_f32m)(in + q, vl);
      acc0 = FMACC(acc0, taps[q], strip, vl);
      if (MBLAST_UNROLL > 1) acc1 = FMACC(acc1, taps[stride + q], strip, vl);
      if (MBLAST_UNROLL > 2) acc2 = FMACC(acc2, taps[2 * stride + q], strip, vl);
      if (MBLAST_UNROLL > 3) acc3 = FMACC(acc3, taps[3 * stride + q], strip, vl);
    }
  }
  float* out = y + o * out_len + t;
  MBLAST_M(vse32_v_f32m)(out, acc0, vl);
  if (channels > 1) MBLAST_M(vse32_v_f32m)(out + out_len, acc1, vl);
  if (channels > 2) MBLAST_M(vse32_v_f32m)(out + 2 * out_len, acc2, vl);
  if (channels > 3) MBLAST_M(vse32_v_f32m)(out + 3 * out_len, acc3, vl);
}

void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs) {
  (void)n_inputs;
  (void)n_outputs;
  const long batch = inputs[0].sizes[0], in_ch = inputs[0].sizes[1], length = inputs[0].sizes[2];
  const long out_ch = inputs[1].sizes[0], kernel = inputs[1].sizes[2];
  const long out_len = length - kernel + 1;
  for (long b = 0; b < batch; ++b) {
    const float* x = inputs[0].data + b * in_ch * length;
    float* y = outputs[0].data + b * out_ch * out_len;
    for (long t = 0; t < out_len;) {
      const size_t vl = MBLAST_M(vsetvl_e32m)((size_t)(out_len - t));
      long o = 0;
      for (; o + MBLAST_UNROLL <= out_ch; o += MBLAST_UNROLL) {
        channel_block(x, inputs[1].data, inputs[2].data, y, in_ch, length, kernel, out_len, o,
                      MBLAST_UNROLL, t, vl);
      }
      for (; o < out_ch; ++o) {
        channel_block(x, inputs[1].data, inputs[2].data, y, in_ch, length, kernel, out_len, o, 1, t,
                      vl);
      }
      t += (long)vl;
    }
  }
}
