import torch
import mblast_cuda

# The whole GELU chain in one pass: each element read once and written once (eager makes a kernel
# and a full-size temporary per op). float4 accesses where the tensors allow them.
CUDA_SRC = r"""
#include <cstdint>

constexpr int kBlock = 256;

__device__ __forceinline__ float gelu_tanh(float v) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__global__ void __launch_bounds__(kBlock) gelu4(const float4* __restrict__ x,
                                               float4* __restrict__ y, long n4) {
    for (long i = blockIdx.x * (long)kBlock + threadIdx.x; i < n4; i += (long)gridDim.x * kBlock) {
        const float4 v = x[i];
        y[i] = make_float4(gelu_tanh(v.x), gelu_tanh(v.y), gelu_tanh(v.z), gelu_tanh(v.w));
    }
}

__global__ void __launch_bounds__(kBlock) gelu1(const float* __restrict__ x,
                                               float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)kBlock + threadIdx.x; i < n; i += (long)gridDim.x * kBlock) {
        y[i] = gelu_tanh(x[i]);
    }
}

extern "C" int gelu_tanh_forward(const float* x, float* y, long n, cudaStream_t stream) {
    if (n <= 0) return 0;
    const bool aligned = ((uintptr_t)x % 16 == 0) && ((uintptr_t)y % 16 == 0);
    const long work = aligned && n % 4 == 0 ? n / 4 : n;
    const long blocks = (work + kBlock - 1) / kBlock;
    const unsigned grid = (unsigned)(blocks < 65535L * 8 ? blocks : 65535L * 8);
    if (aligned && n % 4 == 0) {
        gelu4<<<grid, kBlock, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                           reinterpret_cast<float4*>(y), work);
    } else {
        gelu1<<<grid, kBlock, 0, stream>>>(x, y, n);
    }
    return 0;
}
"""
lib = mblast_cuda.load(CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, *init_args):
        super().__init__()

    def forward(self, x):
        assert x.dtype == torch.float32, "float32 input"
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.gelu_tanh_forward(x, y, x.numel())
        return y
