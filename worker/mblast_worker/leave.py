"""Ending the worker process at once, after its last line is out."""

import os
import sys
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """os._exit after flushing: no atexit handler or thread join from candidate code can hang the
    process or print after the answer."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
