"""FLOPs, minimal bytes and the speed-of-light time of one forward call."""

from typing import Any, Callable, ContextManager, Dict, List, Optional, Tuple

import torch

from .flops import DispatchFlopCounter, unit_of
from .request import DeviceCeilings
from .tensors import dtype_name, flat_tensors, nbytes


def flop_counter() -> Tuple[ContextManager[Any], Callable[[], Dict[str, float]]]:
    """A mode that counts FLOPs per arithmetic unit (flops.unit_of) while entered, and what reads
    them afterwards: torch.utils.flop_counter where it exists (torch >= 2.1: matrix products,
    convolutions and attention), else the count over the aten ops dispatched (flops.py: the same
    rule for those, and elementwise ops and reductions counted too)."""
    try:
        from torch.utils.flop_counter import FlopCounterMode  # type: ignore[import-not-found]
    except ImportError:
        counter = DispatchFlopCounter()
        return counter, lambda: dict(counter.by_unit)
    mode = FlopCounterMode(display=False)

    def by_unit() -> Dict[str, float]:
        found: Dict[str, float] = {}
        for packet, flops in mode.get_flop_counts().get("Global", {}).items():
            unit = unit_of(getattr(packet, "__name__", str(packet)))
            found[unit] = found.get(unit, 0.0) + float(flops)
        return found

    return mode, by_unit


def count_flops_by_unit(call: Callable[[], Any]) -> Dict[str, float]:
    """FLOPs of one call per arithmetic unit (flop_counter)."""
    mode, by_unit = flop_counter()
    with mode:
        call()
    return by_unit()


def count_flops(call: Callable[[], Any]) -> float:
    """FLOPs of one call, over every unit (count_flops_by_unit)."""
    return float(sum(count_flops_by_unit(call).values()))


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


def unit_peaks(ceilings: DeviceCeilings, dtype: str, conv_tf32: bool, matmul_tf32: bool) -> Dict[str, float]:
    """TFLOP/s of each arithmetic unit (flops.unit_of) for a problem computing in `dtype`: convolutions
    and matrix products at the bfloat16 or float16 rate in those dtypes (float8 too: no float8 rate is
    measured), at the TF32 rate in float32 where TF32 is on for them (cuDNN's convolutions under
    PyTorch's defaults; matrix products only where asked), else, as everything else, at the fp32 rate."""
    fp32 = ceilings.peak_tflops
    tf32 = max(fp32, ceilings.peak_tflops_tf32 or 0.0)
    half = ceilings.peak_tflops_fp16 if dtype == "float16" else ceilings.peak_tflops_bf16
    if dtype.startswith(("float8", "float16", "bfloat16")) and half:
        return {"conv": max(fp32, half), "matmul": max(fp32, half), "other": fp32}
    return {"conv": tf32 if conv_tf32 else fp32, "matmul": tf32 if matmul_tf32 else fp32, "other": fp32}


def compute_ms(flops_by_unit: Dict[str, float], peaks: Dict[str, float]) -> Optional[float]:
    """The FLOPs' time, each unit's at its own peak; None without a peak."""
    if any(peaks.get(unit, 0.0) <= 0 for unit, flops in flops_by_unit.items() if flops > 0):
        return None
    return sum(flops / (peaks[unit] * 1e12) * 1e3 for unit, flops in flops_by_unit.items() if flops > 0)


def sol_ms(flops: Optional[float], bytes_moved: int, ceilings: Optional[DeviceCeilings],
           tf32: bool = False, dtype: str = "float32", flops_by_unit: Optional[Dict[str, float]] = None,
           matmul_tf32: Optional[bool] = None) -> Optional[float]:
    """The speed-of-light time: bytes over the measured bandwidth, each arithmetic unit's FLOPs over
    its measured peak (unit_peaks; `tf32` is cuDNN's setting, `matmul_tf32` the matrix products', the
    same where not given). FLOPs counted before they were split by unit count as convolutions'."""
    if ceilings is None or ceilings.bandwidth_gbs <= 0:
        return None
    memory_ms = bytes_moved / (ceilings.bandwidth_gbs * 1e9) * 1e3
    by_unit = flops_by_unit if flops_by_unit else ({"conv": flops} if flops else {})
    peaks = unit_peaks(ceilings, dtype, tf32, tf32 if matmul_tf32 is None else matmul_tf32)
    return max(memory_ms, compute_ms(by_unit, peaks) or 0.0)


def effective_peak_tflops(flops_by_unit: Dict[str, float], peaks: Dict[str, float]) -> Optional[float]:
    """The one FLOP rate at which all of the problem's FLOPs take their speed-of-light time: what the
    driver's ridge point and speed-of-light fractions divide by (speed_of_light.cpp)."""
    total = sum(flops_by_unit.values())
    ms = compute_ms(flops_by_unit, peaks)
    return total / (ms * 1e-3) / 1e12 if total > 0 and ms else None


def sol_score(t_k: Optional[float], t_b: Optional[float], t_sol: Optional[float]) -> Optional[float]:
    """SOL-ExecBench's score (its sol_score.py): 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), 0.5 at the
    baseline T_b and 1 at the speed of light T_SOL (above 1 when T_k is below it). None where the
    baseline is at or under T_SOL: there the estimate does not hold for this problem (SOL-ExecBench,
    whose T_SOL is a lower bound by construction, scores 1 or 0 instead)."""
    if t_k is None or t_b is None or t_sol is None or t_b <= t_sol:
        return None
    return 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol))
