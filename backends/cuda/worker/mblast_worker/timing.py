"""Timers and timing statistics. Every clock and event used here is a saved original
(guards.py), never whatever candidate code left in torch or time."""

import math
import statistics
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Dict, List

import torch

from . import guards
from .response import TimingStats

_CPU_FLUSH_BYTES: int = 32 << 20
_DEFAULT_L2_BYTES: int = 256 << 20


@dataclass
class Measurement:
    ms: float  # what the timer reports: device time on CUDA, wall time on CPU
    wall_ms: float  # host wall time including a full device synchronize
    result: Any


class Timer(ABC):
    @abstractmethod
    def measure(self, fn: Callable[[], Any]) -> Measurement:
        """Flush caches (if asked), then time one call of fn."""


class CpuTimer(Timer):
    def __init__(self, l2_flush: bool) -> None:
        self._flush = torch.empty(_CPU_FLUSH_BYTES // 4, dtype=torch.float32) if l2_flush else None

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        if self._flush is not None:
            self._flush.fill_(1.0)
        t0 = guards.perf_counter_ns()
        result = fn()
        ms = (guards.perf_counter_ns() - t0) / 1e6
        return Measurement(ms, ms, result)


class CudaTimer(Timer):
    """CUDA events around the call on the current stream, as KernelBench's harness times: the device
    is synchronized, the L2 flushed by writing a buffer larger than it (at least KernelBench's
    256 MiB), and the start event recorded behind the flush without waiting for it, so that the
    host's launch of the call overlaps the flush instead of being counted."""

    def __init__(self, device: torch.device, l2_flush: bool) -> None:
        self.device = device
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or _DEFAULT_L2_BYTES)
        size = max(2 * l2, _DEFAULT_L2_BYTES)
        self._flush = torch.empty(size, dtype=torch.uint8, device=device) if l2_flush else None

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        guards.cuda_synchronize(self.device)
        before = guards.cuda_event_cls(enable_timing=True)
        start = guards.cuda_event_cls(enable_timing=True)
        end = guards.cuda_event_cls(enable_timing=True)
        t0 = guards.perf_counter_ns()
        guards.cuda_event_record(before)
        if self._flush is not None:
            self._flush.fill_(0x5A)
        guards.cuda_event_record(start)
        result = fn()
        guards.cuda_event_record(end)
        guards.cuda_synchronize(self.device)
        # Host time from launching the flush to the end of all work, less the flush itself: what
        # a device-wide wait adds to the events shows work on streams they do not see.
        wall_ms = (guards.perf_counter_ns() - t0) / 1e6 - float(guards.cuda_event_elapsed(before, start))
        return Measurement(float(guards.cuda_event_elapsed(start, end)), wall_ms, result)


_SPUN_UP: Dict[str, bool] = {}
SPIN_UP_S: float = 0.1


def spin_up(device: torch.device, seconds: float = SPIN_UP_S) -> None:
    """Brings an idle GPU to its working clocks before the first measurement (an idle H200 runs at
    a fraction of its clock, and a small problem alone never raises it): matrix products for
    `seconds`, once per process."""
    if device.type != "cuda" or _SPUN_UP.get(str(device)):
        return
    a = torch.randn(2048, 2048, device=device)
    t0 = guards.perf_counter_ns()
    while (guards.perf_counter_ns() - t0) / 1e9 < seconds:
        for _ in range(16):
            torch.mm(a, a)
        guards.cuda_synchronize(device)
    del a
    _SPUN_UP[str(device)] = True


def make_timer(device: torch.device, l2_flush: bool) -> Timer:
    return CudaTimer(device, l2_flush) if device.type == "cuda" else CpuTimer(l2_flush)


def _percentile(sorted_values: List[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples: List[float]) -> TimingStats:
    ordered = sorted(samples)
    return TimingStats(
        median_ms=statistics.median(ordered),
        mean_ms=statistics.fmean(ordered),
        p10_ms=_percentile(ordered, 0.10),
        p90_ms=_percentile(ordered, 0.90),
        stdev_ms=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        runs=len(ordered),
    )


def hides_device_work(wall_ms: List[float], event_ms: List[float]) -> bool:
    """Wall time with a device-wide sync well above the current stream's event time:
    work ran on a stream the events do not see."""
    slack_ms = 0.05 * len(event_ms)
    return sum(wall_ms) > 1.2 * sum(event_ms) + slack_ms
