"""Profile signatures: the numbers the state classifier reads (docs/ARCHITECTURE.md §3).

A signature is a flat dict of metric name -> number, using the names of the seed states'
conditions (kb_schema/seed/states.json), plus `ops` and `kernels`: the per-op and per-kernel time
shares of one forward, largest first, and `regions`: the top-level ops of the forward (an op
called by another op, like the clamp_min inside relu, counts towards its caller) with their
inclusive times, which the operator selector turns into slots. Metrics the
profiler cannot give on this device are left out (a condition on a missing metric is false). The
driver adds the speed-of-light fractions and the arithmetic intensity (speed_of_light.hpp).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import torch

# Kernel-name fragments of tensor-core kernels (cuBLAS/cuDNN/CUTLASS on Ampere and Hopper).
_TENSOR_CORE_MARKERS = ("xmma", "wgmma", "hmma", "tensorop", "gemmSN_TN", "sm90_", "sm80_", "cutlass")
TOP_N = 12


@dataclass
class Share:
    name: str
    ms: float
    share: float
    count: int


def _shares(times: Dict[str, Tuple[float, int]], total_ms: float) -> List[Share]:
    rows = [Share(name, ms, ms / total_ms if total_ms > 0 else 0.0, count)
            for name, (ms, count) in times.items()]
    rows.sort(key=lambda r: r.ms, reverse=True)
    return rows[:TOP_N]


def _event_ms(event: Any, attribute: str) -> float:
    return float(getattr(event, attribute, 0.0) or 0.0) / 1000.0



def _top_level_ids(prof: Any) -> Optional[Set[int]]:
    """The ids of the aten ops that no other aten op called, from the profiler's own call tree
    (built from each op's enter and exit, in nanoseconds). None where this torch lacks the tree.

    Not from the events' time ranges: they are whole microseconds, start and duration rounded
    apart, so a callee that starts in its caller's last microsecond (relu's clamp_min) looks as if
    it started after the caller ended."""
    try:
        roots = prof.profiler.kineto_results.experimental_event_tree()
    except (AttributeError, RuntimeError):
        return None
    ids: Set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if str(node.name).startswith("aten::"):
            ids.add(int(node.correlation_id))
        else:
            stack.extend(node.children)
    return ids


def _starts_outside(event: Any, last_top: Dict[Any, Tuple[float, float]]) -> bool:
    """Fallback without the call tree: an op is top-level unless it starts inside the last
    top-level op of its thread (ops run synchronously, so one that starts inside another is its
    callee). Microsecond rounding can make a callee look top-level."""
    span = (float(event.time_range.start), float(event.time_range.end))
    top = last_top.get(event.thread)
    if top is not None and (top[0] <= span[0] < top[1] or span == (top[1], top[1])):
        return False
    last_top[event.thread] = span
    return True


PROFILED_MS: float = 30.0  # about how much forward time one profile records


def profiled_runs(forward_ms: Optional[float], most: int = 3) -> int:
    """How many forwards to profile: `most` for short ones (their few kernels' times are noisy),
    fewer for long ones, whose thousands of events cost the profiler seconds per forward (an
    LSTM's 37 ms forward of 6244 kernels: 9 s for candidate and reference, 3 forwards each)."""
    if forward_ms is None or not forward_ms > 0:
        return most
    return max(1, min(most, int(PROFILED_MS / forward_ms)))


def profile_forward(forward: Callable[[], Any], device: torch.device, runs: int = 3,
                    grad: bool = False) -> Dict[str, Any]:
    """Profiles `runs` forwards after one warm-up, in the grad mode given (the one the forward was
    timed in: a compiled module compiles again in another); returns per-forward op and kernel
    figures."""
    from torch.profiler import ProfilerActivity, profile

    on_gpu = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with torch.set_grad_enabled(grad):
        forward()
        if on_gpu:
            torch.cuda.synchronize(device)
        with profile(activities=activities) as prof:
            for _ in range(runs):
                forward()
            if on_gpu:
                torch.cuda.synchronize(device)
    ops: Dict[str, Tuple[float, int]] = {}
    regions: Dict[str, Tuple[float, int]] = {}
    kernels: Dict[str, Tuple[float, int]] = {}
    kernel_spans: List[Tuple[float, float]] = []
    events = list(prof.events())
    top_level = _top_level_ids(prof)
    if top_level is not None and not any(getattr(e, "id", None) in top_level for e in events):
        top_level = None  # the tree's ids are not the events' here: fall back to time ranges
    last_top: Dict[Any, Tuple[float, float]] = {}
    for event in events:
        device_type = str(getattr(event, "device_type", "")).split(".")[-1]
        if on_gpu and device_type == "CUDA":
            ms = _event_ms(event, "device_time") or _event_ms(event, "cuda_time")
            total, count = kernels.get(event.name, (0.0, 0))
            kernels[event.name] = (total + ms, count + 1)
            start = float(event.time_range.start) / 1000.0
            kernel_spans.append((start, start + ms))
        elif device_type == "CPU" and event.name.startswith("aten::"):
            ms = _event_ms(event, "self_cpu_time_total")
            total, count = ops.get(event.name, (0.0, 0))
            ops[event.name] = (total + ms, count + 1)
            if top_level is not None:
                is_top = event.id in top_level
            else:
                is_top = _starts_outside(event, last_top)
            if is_top:
                inclusive = (_event_ms(event, "device_time_total") or _event_ms(event, "cuda_time_total")
                             if on_gpu else _event_ms(event, "cpu_time_total"))
                total, count = regions.get(event.name, (0.0, 0))
                regions[event.name] = (total + inclusive, count + 1)
    per_run = {name: (ms / runs, count // runs) for name, (ms, count) in ops.items()}
    per_run_regions = {name: (ms / runs, count // runs) for name, (ms, count) in regions.items()}
    per_run_kernels = {name: (ms / runs, count // runs) for name, (ms, count) in kernels.items()}
    busy_ms = sum(ms for ms, _ in per_run_kernels.values()) if on_gpu else sum(
        ms for ms, _ in per_run.values())
    span_ms = 0.0
    if kernel_spans:
        span_ms = (max(end for _, end in kernel_spans) - min(start for start, _ in kernel_spans)) / runs
    return {"ops": per_run, "regions": per_run_regions, "kernels": per_run_kernels, "busy_ms": busy_ms,
            "span_ms": span_ms}


def build_signature(profiled: Dict[str, Any], total_ms: float, on_gpu: bool) -> Dict[str, Any]:
    """Turns profiler figures into the classifier's metrics. The speed-of-light fractions (the
    response's flops and min_bytes against the device's ceilings) are the driver's, computed in one
    place for every backend (include/mblast/speed_of_light.hpp)."""
    sig: Dict[str, Any] = {"total_ms": total_ms}
    kernels: Dict[str, Tuple[float, int]] = profiled["kernels"]
    ops: Dict[str, Tuple[float, int]] = profiled["ops"]
    if on_gpu and kernels:
        count = sum(c for _, c in kernels.values())
        busy = float(profiled["busy_ms"])
        sig["kernel_count"] = float(count)
        sig["mean_kernel_us"] = busy / max(count, 1) * 1000.0
        sig["launch_overhead_fraction"] = max(0.0, 1.0 - busy / total_ms) if total_ms > 0 else 0.0
        tensor_ms = sum(ms for name, (ms, _) in kernels.items()
                        if any(marker in name for marker in _TENSOR_CORE_MARKERS))
        sig["tensor_core_fraction"] = tensor_ms / busy if busy > 0 else 0.0
    elif ops:
        sig["kernel_count"] = float(sum(c for _, c in ops.values()))
        busy = float(profiled["busy_ms"])
        sig["mean_kernel_us"] = busy / max(sig["kernel_count"], 1.0) * 1000.0
    shares_base = float(profiled["busy_ms"]) or total_ms
    sig["ops"] = [vars(s) for s in _shares(ops, shares_base if not on_gpu else total_ms)]
    sig["kernels"] = [vars(s) for s in _shares(kernels, shares_base)]
    regions: Dict[str, Tuple[float, int]] = profiled.get("regions", {})
    region_total = sum(ms for ms, _ in regions.values())
    sig["regions"] = [vars(s) for s in _shares(regions, region_total)]
    return sig
