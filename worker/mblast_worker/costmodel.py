"""FLOPs, minimal bytes and the speed-of-light time of one forward call."""

from typing import Any, Callable, List, Optional

import torch

from .flops import count_dispatch_flops
from .request import DeviceCeilings
from .tensors import dtype_name, flat_tensors, nbytes


def count_flops(call: Callable[[], Any]) -> Optional[float]:
    """FLOPs of one call via torch.utils.flop_counter (torch >= 2.1), else counted over the aten
    ops it dispatches (flops.py: the same rule for matrix products and convolutions, and
    elementwise ops and reductions counted too)."""
    try:
        from torch.utils.flop_counter import FlopCounterMode  # type: ignore[import-not-found]
    except ImportError:
        return count_dispatch_flops(call)
    counter = FlopCounterMode(display=False)
    with counter:
        call()
    return float(counter.get_total_flops())


def min_bytes(inputs: List[Any], model: torch.nn.Module, outputs: List[torch.Tensor]) -> int:
    """Every input, parameter, buffer and output touched once."""
    state = [t for t in model.state_dict().values() if isinstance(t, torch.Tensor)]
    return sum(nbytes(t) for t in flat_tensors(inputs) + state + list(outputs))


# Floating dtypes from the fastest arithmetic to the slowest: a problem's compute dtype is the first
# one any of its tensors has.
_PRECISION_ORDER = ("float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64")


def compute_dtype(tensors: List[torch.Tensor]) -> str:
    """The lowest-precision floating dtype among a problem's inputs and parameters ("float32" when
    none is floating): the arithmetic its work can be done in."""
    names = {dtype_name(t.dtype) for t in tensors if t.is_floating_point()}
    return next((n for n in _PRECISION_ORDER if n in names), "float32")


def sol_ms(flops: Optional[float], bytes_moved: int, ceilings: Optional[DeviceCeilings],
           tf32: bool = False, dtype: str = "float32") -> Optional[float]:
    """The speed-of-light time: bytes over the measured bandwidth, FLOPs over the measured peak of
    the fastest arithmetic the problem's dtype and the precision settings allow: the bfloat16 or
    float16 matmul rate for problems in those dtypes (float8 ones too: no float8 rate is measured),
    TF32 where it is on for any op (cuDNN convolutions run in TF32 under PyTorch's defaults)."""
    if ceilings is None or ceilings.bandwidth_gbs <= 0:
        return None
    memory_ms = bytes_moved / (ceilings.bandwidth_gbs * 1e9) * 1e3
    peak = ceilings.peak_tflops
    if tf32 and ceilings.peak_tflops_tf32:
        peak = max(peak, ceilings.peak_tflops_tf32)
    half = ceilings.peak_tflops_fp16 if dtype == "float16" else ceilings.peak_tflops_bf16
    if dtype.startswith(("float8", "float16", "bfloat16")) and half:
        peak = max(peak, half)
    compute_ms = 0.0
    if flops is not None and peak > 0:
        compute_ms = flops / (peak * 1e12) * 1e3
    return max(memory_ms, compute_ms)


def sol_score(t_k: Optional[float], t_b: Optional[float], t_sol: Optional[float]) -> Optional[float]:
    """SOL-ExecBench's score (its sol_score.py): 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), 0.5 at the
    baseline T_b and 1 at the speed of light T_SOL (above 1 when T_k is below it). None where the
    baseline is at or under T_SOL: there the estimate does not hold for this problem (SOL-ExecBench,
    whose T_SOL is a lower bound by construction, scores 1 or 0 instead)."""
    if t_k is None or t_b is None or t_sol is None or t_b <= t_sol:
        return None
    return 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol))
