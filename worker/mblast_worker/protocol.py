"""The protocol stream: one JSON object per line on the process's original stdout.

Candidate code may print; fd 1 is pointed at stderr before any of it is imported, and
the protocol is written to a private duplicate of the original stdout instead.
"""

import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict


@dataclass
class ProtocolStream:
    fd: int

    def write_object(self, obj: Dict[str, Any]) -> None:
        data = (json.dumps(json_safe(obj), allow_nan=False, sort_keys=False) + "\n").encode()
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


def detach_stdout() -> ProtocolStream:
    """Keep the original stdout for the protocol and send fd 1 to stderr.

    os.dup returns a non-inheritable fd, so subprocesses of candidate code cannot
    write to the protocol either.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    return ProtocolStream(protocol_fd)


def json_safe(value: Any) -> Any:
    """Plain JSON: non-finite floats become null (strict parsers reject NaN tokens)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / 0-d tensor scalars
        return json_safe(value.item())
    return str(value)
