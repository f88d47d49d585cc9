"""Progress lines to the driver, before the response: `{"progress": EVENT, ...}`. The driver
derives a candidate's time limit from them (the reference's time is known once the problem is
prepared; compilation ends with the first call). Without a sink (tests, `run`) nothing is sent."""

from typing import Any, Callable, Dict, Optional

_sink: Optional[Callable[[Dict[str, Any]], None]] = None


def set_sink(sink: Optional[Callable[[Dict[str, Any]], None]]) -> None:
    global _sink
    _sink = sink


def report(event: str, **fields: Any) -> None:
    if _sink is not None:
        _sink({"progress": event, **fields})
