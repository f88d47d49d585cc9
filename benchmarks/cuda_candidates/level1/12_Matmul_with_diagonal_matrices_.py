import torch
import mblast_cuda

# diag(A) @ B as KernelBench writes it, A.unsqueeze(1) * B: every row i of B (N x M) scaled by A[i].
# Memory bound: one read of B, one write of C. float4 along the rows when M is a multiple of 4 and
# the pointers are 16-byte aligned, one float per thread otherwise; 64-bit indices, grid-stride.
CUDA_SRC = r"""
#include <cstdint>

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) diag_scale4(const float* __restrict__ a,
                                                        const float4* __restrict__ b,
                                                        float4* __restrict__ c, long long rows,
                                                        long long cols4) {
    const long long total = rows * cols4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const float s = __ldg(a + i / cols4);
        float4 v = b[i];
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w *= s;
        c[i] = v;
    }
}

__global__ void __launch_bounds__(kThreads) diag_scale1(const float* __restrict__ a,
                                                        const float* __restrict__ b,
                                                        float* __restrict__ c, long long rows,
                                                        long long cols) {
    const long long total = rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        c[i] = __ldg(a + i / cols) * b[i];
    }
}

static unsigned diag_grid(long long work) {
    static int sms = 0;
    if (sms == 0) {
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
            sms <= 0) {
            sms = 132;
        }
    }
    long long blocks = (work + kThreads - 1) / kThreads;
    const long long cap = (long long)sms * 16;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (unsigned)blocks;
}

extern "C" int diag_matmul_forward(const float* a, const float* b, float* c, long rows, long cols,
                                   cudaStream_t stream) {
    if (rows < 0 || cols < 0) return (int)cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return 0;
    const bool aligned = ((uintptr_t)b % 16 == 0) && ((uintptr_t)c % 16 == 0);
    if (aligned && cols % 4 == 0) {
        const long long cols4 = (long long)cols / 4;
        diag_scale4<<<diag_grid((long long)rows * cols4), kThreads, 0, stream>>>(
            a, reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c), rows, cols4);
    } else {
        diag_scale1<<<diag_grid((long long)rows * cols), kThreads, 0, stream>>>(a, b, c, rows, cols);
    }
    return (int)cudaPeekAtLastError();
}
"""
lib = mblast_cuda.load(CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        assert A.dim() == 1 and B.dim() == 2 and A.shape[0] == B.shape[0], "diag(A) @ B: A (N,), B (N, M)"
        A = A.contiguous()
        B = B.contiguous()
        C = torch.empty_like(B)
        lib.diag_matmul_forward(A, B, C, B.shape[0], B.shape[1])
        return C
