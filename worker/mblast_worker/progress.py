"""Progress lines to the driver, before the response: `{"progress": EVENT, ...}`. The driver
derives a candidate's time limit from them (the reference's time is known once the problem is
prepared; compilation ends with the first call). Without a sink (tests, `run`) nothing is sent."""

import sys
from typing import Any, Callable, Dict, Optional

from .leave import leave

_sink: Optional[Callable[[Dict[str, Any]], None]] = None


def set_sink(sink: Optional[Callable[[Dict[str, Any]], None]]) -> None:
    global _sink
    _sink = sink


def report(event: str, **fields: Any) -> None:
    if _sink is not None:
        _sink({"progress": event, **fields})


def has_driver() -> bool:
    """Whether a driver reads the progress lines (the worker's serve mode)."""
    return _sink is not None


def hold() -> None:
    """A held eval (the request's "hold"): reports "held" after the candidate's first call and waits
    for the driver's "go" line; anything else (end of input: the driver chose another candidate)
    ends the process without an answer. Only where has_driver(): nobody else could answer."""
    report("held")
    if sys.stdin.readline().strip() != "go":
        leave(0)
