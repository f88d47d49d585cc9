"""FLOPs, minimal bytes and the speed-of-light time of one forward call."""

from typing import Any, Callable, List, Optional

import torch

from .flops import count_dispatch_flops
from .request import DeviceCeilings
from .tensors import flat_tensors, nbytes


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


def sol_ms(flops: Optional[float], bytes_moved: int, ceilings: Optional[DeviceCeilings],
           tf32: bool = False) -> Optional[float]:
    """The speed-of-light time: bytes over the measured bandwidth, FLOPs over the measured peak of
    the fastest arithmetic the precision settings allow (TF32 where it is on for any op: cuDNN
    convolutions run in TF32 under PyTorch's defaults)."""
    if ceilings is None or ceilings.bandwidth_gbs <= 0:
        return None
    memory_ms = bytes_moved / (ceilings.bandwidth_gbs * 1e9) * 1e3
    peak = ceilings.peak_tflops
    if tf32 and ceilings.peak_tflops_tf32:
        peak = max(peak, ceilings.peak_tflops_tf32)
    compute_ms = 0.0
    if flops is not None and peak > 0:
        compute_ms = flops / (peak * 1e12) * 1e3
    return max(memory_ms, compute_ms)
