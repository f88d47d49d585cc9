"""Timers and timing statistics. Every clock and event used here is a saved original
(guards.py), never whatever candidate code left in torch or time."""

import math
import statistics
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, List

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
    """CUDA events around the call on the current stream; the L2 is flushed by writing a
    buffer twice its size, and the device is idle when the call starts."""

    def __init__(self, device: torch.device, l2_flush: bool) -> None:
        self.device = device
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or _DEFAULT_L2_BYTES)
        self._flush = torch.empty(2 * l2, dtype=torch.uint8, device=device) if l2_flush else None

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        if self._flush is not None:
            self._flush.fill_(0x5A)
        guards.cuda_synchronize(self.device)
        start = guards.cuda_event_cls(enable_timing=True)
        end = guards.cuda_event_cls(enable_timing=True)
        t0 = guards.perf_counter_ns()
        guards.cuda_event_record(start)
        result = fn()
        guards.cuda_event_record(end)
        guards.cuda_synchronize(self.device)
        wall_ms = (guards.perf_counter_ns() - t0) / 1e6
        return Measurement(float(guards.cuda_event_elapsed(start, end)), wall_ms, result)


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
