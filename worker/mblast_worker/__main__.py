"""Command line: `serve` (the driver's protocol) and `run REQUEST.json` (debugging)."""

import argparse
import faulthandler
import json
import os
import sys
from typing import Any, List, Optional

from .leave import leave


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mblast_worker")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="ready line, then one request from stdin, one response line; exit")
    run_p = sub.add_parser("run", help="execute one request from a file, print the response")
    run_p.add_argument("request", help="path of a JSON request")
    args = parser.parse_args(argv)

    # Before torch or any candidate code: prints must never reach the protocol stream.
    from .protocol import detach_stdout

    stream = detach_stdout()
    faulthandler.enable(file=sys.stderr)  # a crash leaves a Python stack on stderr, then dies by its signal

    import torch

    from . import guards

    assert guards.perf_counter_ns is not None  # imported now: the originals are saved before any candidate code
    from .device import default_device_spec, device_name, init_device, parse_device, warm_imports
    from .ops import handle, python_version

    spec = default_device_spec()
    if args.command == "serve":
        try:
            device = parse_device(spec)
            init_device(device)
            warm_imports()
            ready: dict = {"ready": True, "pid": os.getpid(), "torch": str(torch.__version__), "device": str(device),
                           "device_name": device_name(device), "python": python_version()}
        except Exception as exc:  # noqa: BLE001
            stream.write_object({"ready": False, "pid": os.getpid(), "error": f"{type(exc).__name__}: {exc}"})
            leave(1)
        stream.write_object(ready)
        from . import progress

        progress.set_sink(stream.write_object)
        line = sys.stdin.readline()
        raw: Any
        try:
            raw = json.loads(line) if line.strip() else None
        except json.JSONDecodeError as exc:
            raw = f"unparseable request: {exc}"
        stream.write_object(handle(raw, spec))
        leave(0)

    try:
        with open(args.request, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raw = f"unreadable request file {args.request}: {exc}"
    stream.write_object(handle(raw, spec))
    leave(0)


if __name__ == "__main__":
    sys.exit(main())
