/* mblast RVV candidate ABI. A candidate is one C file that defines mblast_forward. */
#ifndef MBLAST_RVV_H
#define MBLAST_RVV_H

/* A float32 tensor, C-contiguous. Rank-0 tensors (scalars) hold one value. */
typedef struct {
  float* data;
  int rank;
  long sizes[8];
} mblast_tensor;

/* inputs: the forward's arguments (input0, input1, ...) then the parameters in state_dict
 * order. outputs: preallocated with the expected shapes and filled with NaN; write every
 * element. Inputs are read-only. */
void mblast_forward(const mblast_tensor* inputs, int n_inputs, mblast_tensor* outputs,
                    int n_outputs);

/* Tuning knobs that mblast sweeps (-DMBLAST_LMUL=1|2|4|8, -DMBLAST_UNROLL=1|2|4). */
#ifndef MBLAST_LMUL
#define MBLAST_LMUL 1
#endif
#ifndef MBLAST_UNROLL
#define MBLAST_UNROLL 1
#endif

#define MBLAST_CAT_(a, b) a##b
#define MBLAST_CAT(a, b) MBLAST_CAT_(a, b)
/* Names at the swept LMUL. With MBLAST_LMUL=4: MBLAST_M(vle32_v_f32m) is vle32_v_f32m4,
 * MBLAST_MS(vfredusum_vs_f32m, _f32m1) is vfredusum_vs_f32m4_f32m1, mblast_vfloat32_t is
 * vfloat32m4_t. */
#define MBLAST_M(prefix) MBLAST_CAT(prefix, MBLAST_LMUL)
#define MBLAST_MS(prefix, suffix) MBLAST_CAT(MBLAST_M(prefix), suffix)
#define mblast_vfloat32_t MBLAST_MS(vfloat32m, _t)

#endif
