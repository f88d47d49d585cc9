"""The `ceilings` op: the device's measured copy bandwidth and matmul rates.

A ceiling is the fastest of several timed runs, not their median: the speed of light must bound
what the device reaches. With medians of 4096-wide products, cuBLAS's fp32 product of a
2048 x 4096 x 4096 SOL-ExecBench workload ran at 52.2 TFLOP/s beside a measured 51.6 (H100,
call 100), so that workload's reference read faster than its speed of light."""

from typing import Callable, Optional, Tuple

import torch

from . import guards
from .guards import Tf32Setting, apply_tf32
from .timing import make_timer


def _best_ms(device: torch.device, fn: Callable[[], object], reps: int) -> float:
    timer = make_timer(device, l2_flush=False)
    fn()
    return min(timer.measure(fn).ms for _ in range(reps))


def _copy_ms(device: torch.device, nbytes: int, reps: int) -> float:
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    return _best_ms(device, lambda: dst.copy_(src), reps)


def _matmul_ms(device: torch.device, n: int, reps: int, tf32: bool = False) -> float:
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    apply_tf32(Tf32Setting(tf32, tf32))
    try:
        return _best_ms(device, lambda: torch.mm(a, b), reps)
    finally:
        apply_tf32(Tf32Setting(False, False))


def measure_tf32(device: torch.device) -> Optional[float]:
    """fp32 matmul TFLOP/s with TF32 on (the tensor cores' fp32 mode), on CUDA only: the ceiling
    of convolutions, which cuDNN runs in TF32 by default."""
    if device.type != "cuda":
        return None
    n = 8192
    return 2 * n**3 / (_matmul_ms(device, n, 10, tf32=True) * 1e-3) / 1e12


def measure_half(device: torch.device, dtype: torch.dtype) -> Optional[float]:
    """bfloat16 or float16 matmul TFLOP/s (fp32 accumulation, the tensor cores' rate), on CUDA
    only: the ceiling of problems computed in that dtype."""
    if device.type != "cuda":
        return None
    n = 8192
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return 2 * n**3 / (_best_ms(device, lambda: torch.mm(a, b), 10) * 1e-3) / 1e12


def measure(device: torch.device) -> Tuple[float, float]:
    """(bandwidth GB/s counting bytes read and written, fp32 TFLOP/s with TF32 off)."""
    on_gpu = device.type == "cuda"
    reps = 10 if on_gpu else 5
    copy_bytes = (1 << 30) if on_gpu else (64 << 20)
    n = 8192 if on_gpu else 512
    copy_ms = _copy_ms(device, copy_bytes, reps)
    mm_ms = _matmul_ms(device, n, reps)
    if on_gpu:
        guards.cuda_synchronize(device)
    bandwidth_gbs = 2 * copy_bytes / (copy_ms * 1e-3) / 1e9
    peak_tflops = 2 * n**3 / (mm_ms * 1e-3) / 1e12
    return bandwidth_gbs, peak_tflops
