"""Where one request spends its time: named phases.

Top-level phases ("load", "trials", "timing", ...) do not overlap, so they add up to the
request's time with "other". A phase entered inside another is also recorded under its path
("timing/reference": reference outputs computed during timing), included in its parent's
time. Timed with the saved original clock (guards.py), so candidate code that patches time
cannot skew it.
"""

from contextlib import contextmanager
from typing import Dict, Iterator, List

from . import guards


class Phases:
    def __init__(self) -> None:
        self._start = guards.perf_counter_ns()
        self._seconds: Dict[str, float] = {}
        self._stack: List[str] = []

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        path = f"{self._stack[-1]}/{name}" if self._stack else name
        if self._stack and self._stack[-1].split("/")[-1] == name:
            yield  # re-entering the same phase: already counted by the outer one
            return
        self._stack.append(path)
        t0 = guards.perf_counter_ns()
        try:
            yield
        finally:
            self._seconds[path] = self._seconds.get(path, 0.0) + (guards.perf_counter_ns() - t0) / 1e9
            self._stack.pop()

    def seconds(self) -> Dict[str, float]:
        """Seconds per phase, including nested ones; "other" is time outside every top-level phase and
        "total" the time since creation."""
        total = (guards.perf_counter_ns() - self._start) / 1e9
        top = sum(s for path, s in self._seconds.items() if "/" not in path)
        out = {path: round(s, 6) for path, s in self._seconds.items()}
        out["other"] = round(max(0.0, total - top), 6)
        out["total"] = round(total, 6)
        return out
