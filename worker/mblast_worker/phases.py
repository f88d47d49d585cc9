"""Where one request spends its time: named phases.

Top-level phases ("load", "trials", "timing", ...) do not overlap, so they add up to the
request's time with "other". A phase entered inside another is also recorded under its path
("timing/reference": reference outputs computed during timing), included in its parent's
time. Timed with the saved original clock (guards.py), so candidate code that patches time
cannot skew it. Given a peak reader (memory.take_window), each phase also records the most device
memory allocated while it ran, its nested phases included: where a judge over its budget spends it.
"""

from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, Optional

from . import guards


class Phases:
    def __init__(self, peak_reader: Optional[Callable[[], int]] = None) -> None:
        self._start = guards.perf_counter_ns()
        self._seconds: Dict[str, float] = {}
        self._stack: List[str] = []
        self._read_peak = peak_reader
        self._running_peak: List[int] = []  # per open phase: its peak so far
        self._peaks: Dict[str, int] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        path = f"{self._stack[-1]}/{name}" if self._stack else name
        if self._stack and self._stack[-1].split("/")[-1] == name:
            yield  # re-entering the same phase: already counted by the outer one
            return
        self._enter_peak()
        self._stack.append(path)
        t0 = guards.perf_counter_ns()
        try:
            yield
        finally:
            self._seconds[path] = self._seconds.get(path, 0.0) + (guards.perf_counter_ns() - t0) / 1e9
            self._exit_peak(path)
            self._stack.pop()

    def _enter_peak(self) -> None:
        if self._read_peak is None:
            return
        window = self._read_peak()  # what the enclosing phase reached before this one
        if self._running_peak:
            self._running_peak[-1] = max(self._running_peak[-1], window)
        self._running_peak.append(0)

    def _exit_peak(self, path: str) -> None:
        if self._read_peak is None:
            return
        peak = max(self._running_peak.pop(), self._read_peak())
        self._peaks[path] = max(self._peaks.get(path, 0), peak)
        if self._running_peak:
            self._running_peak[-1] = max(self._running_peak[-1], peak)

    def count_from_now(self) -> None:
        """The time since creation outside this object's phases was not its own (a request that
        judges several problems judged another meanwhile): from now, "total" is the phases recorded
        so far plus the time from here on."""
        top = sum(s for path, s in self._seconds.items() if "/" not in path)
        self._start = guards.perf_counter_ns() - int(top * 1e9)

    def peak_bytes(self) -> Optional[Dict[str, int]]:
        """Allocated device-memory peak per phase path; None without a peak reader."""
        return dict(self._peaks) if self._read_peak is not None else None

    def seconds(self) -> Dict[str, float]:
        """Seconds per phase, including nested ones; "other" is time outside every top-level phase and
        "total" the time since creation."""
        total = (guards.perf_counter_ns() - self._start) / 1e9
        top = sum(s for path, s in self._seconds.items() if "/" not in path)
        out = {path: round(s, 6) for path, s in self._seconds.items()}
        out["other"] = round(max(0.0, total - top), 6)
        out["total"] = round(total, 6)
        return out
