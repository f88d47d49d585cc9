import torch
import mblast_cuda

CUDA_SRC = r"""
extern "C" __global__ void relu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

extern "C" void relu(const float* x, float* y, long n, cudaStream_t stream) {
    if (n <= 0) return;
    long blocks = (n + 255) / 256;
    if (blocks > 65535L * 32) blocks = 65535L * 32;
    relu_kernel<<<(unsigned)blocks, 256, 0, stream>>>(x, y, n);
}
"""
lib = mblast_cuda.load(CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, *init_args):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())  # tensors pass as device pointers; the stream is appended
        return y
