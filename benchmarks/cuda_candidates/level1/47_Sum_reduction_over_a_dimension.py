import torch
import mblast_cuda

# torch.sum(x, dim=d, keepdim=True) for a contiguous fp32 tensor of any rank. The tensor is seen as
# (outer, r, inner) with r the reduced extent. Sums accumulate in double, so the result is the
# float64 reference's up to the final rounding to fp32, whatever r is.
#  - inner > 1 (the problem: 128 x 4096 x 4095, d = 1): one thread per output column; a warp
#    reads 32 neighbouring columns of one row at a time, so every load is coalesced.
#  - inner == 1 (reducing the last dimension): one block per output, a strided pass over the row
#    and a shuffle + shared-memory tree.
CUDA_SRC = r"""
#include <cstdint>

constexpr int kThreads = 256;
constexpr unsigned kFull = 0xffffffffu;

__global__ void __launch_bounds__(kThreads) sum_columns(const float* __restrict__ x,
                                                        float* __restrict__ y, long long outer,
                                                        long long r, long long inner) {
    const long long outputs = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < outputs; o += stride) {
        const long long b = o / inner;
        const long long j = o - b * inner;
        const float* p = x + b * r * inner + j;
        // Four independent partial sums keep several loads in flight per thread.
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        long long k = 0;
        for (; k + 4 <= r; k += 4) {
            s0 += (double)__ldg(p + (k + 0) * inner);
            s1 += (double)__ldg(p + (k + 1) * inner);
            s2 += (double)__ldg(p + (k + 2) * inner);
            s3 += (double)__ldg(p + (k + 3) * inner);
        }
        for (; k < r; ++k) s0 += (double)__ldg(p + k * inner);
        y[o] = (float)((s0 + s1) + (s2 + s3));
    }
}

__global__ void __launch_bounds__(kThreads) sum_rows(const float* __restrict__ x,
                                                     float* __restrict__ y, long long rows,
                                                     long long r) {
    __shared__ double warp_sums[kThreads / 32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* p = x + row * r;
        double s = 0.0;
        for (long long k = threadIdx.x; k < r; k += kThreads) s += (double)__ldg(p + k);
        for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(kFull, s, offset);
        if (lane == 0) warp_sums[warp] = s;
        __syncthreads();
        if (warp == 0) {
            s = lane < kThreads / 32 ? warp_sums[lane] : 0.0;
            for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(kFull, s, offset);
            if (lane == 0) y[row] = (float)s;
        }
        __syncthreads();  // warp_sums is reused by the next row
    }
}

static long long sum_grid_cap() {
    static int sms = 0;
    if (sms == 0) {
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
            sms <= 0) {
            sms = 132;
        }
    }
    return (long long)sms * 32;
}

extern "C" int sum_dim_forward(const float* x, float* y, long outer, long r, long inner,
                               cudaStream_t stream) {
    if (outer < 0 || r < 0 || inner < 0) return (int)cudaErrorInvalidValue;
    if (outer == 0 || inner == 0) return 0;
    const long long cap = sum_grid_cap();
    if (inner == 1) {
        const long long blocks = outer < cap ? outer : cap;
        sum_rows<<<(unsigned)blocks, kThreads, 0, stream>>>(x, y, outer, r);
    } else {
        long long blocks = ((long long)outer * inner + kThreads - 1) / kThreads;
        if (blocks > cap) blocks = cap;
        sum_columns<<<(unsigned)blocks, kThreads, 0, stream>>>(x, y, outer, r, inner);
    }
    return (int)cudaPeekAtLastError();
}
"""
lib = mblast_cuda.load(CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        if x.dim() == 0:
            return x.clone()
        d = self.dim % x.dim()
        shape = list(x.shape)
        outer = 1
        for extent in shape[:d]:
            outer *= extent
        inner = 1
        for extent in shape[d + 1:]:
            inner *= extent
        r = shape[d]
        shape[d] = 1
        y = torch.empty(shape, dtype=x.dtype, device=x.device)
        lib.sum_dim_forward(x, y, outer, r, inner)
        return y
