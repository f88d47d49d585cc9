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
    hidden_ms: float  # CUDA: what a device-wide wait adds once the timed stream is done (0 on the CPU)
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
        return Measurement(ms, 0.0, result)


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
        start = guards.cuda_event_cls(enable_timing=True)
        end = guards.cuda_event_cls(enable_timing=True)
        if self._flush is not None:
            self._flush.fill_(0x5A)
        guards.cuda_event_record(start)
        result = fn()
        guards.cuda_event_record(end)
        guards.cuda_event_synchronize(end)
        t_stream = guards.perf_counter_ns()
        guards.cuda_synchronize(self.device)
        # Work still running once the timed stream is done ran on streams the events do not see.
        # The host's own time (launch overhead, Python) counts on neither side of this difference.
        hidden_ms = (guards.perf_counter_ns() - t_stream) / 1e6
        return Measurement(float(guards.cuda_event_elapsed(start, end)), hidden_ms, result)


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


def hides_device_work(hidden_ms: List[float], event_ms: List[float]) -> bool:
    """Device work left after the timed stream finished, beyond a fifth of the events' time and a
    wait's own cost: work ran on a stream the events do not see."""
    slack_ms = 0.02 * len(event_ms)
    return sum(hidden_ms) > 0.2 * sum(event_ms) + slack_ms
