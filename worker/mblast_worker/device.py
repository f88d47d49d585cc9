"""Device selection and description."""

import os
import platform
from typing import Optional

import torch


def parse_device(spec: str) -> torch.device:
    device = torch.device(spec)
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {spec!r}: expected cpu, cuda or cuda:N")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    return device


def init_device(device: torch.device) -> None:
    """Create the CUDA context up front so its cost is not charged to the first request."""
    if device.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA was requested but torch.cuda.is_available() is False")
    torch.cuda.set_device(device)
    torch.empty(1, device=device).fill_(0)
    torch.cuda.synchronize(device)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return _cpu_model() or platform.processor() or "cpu"


def _cpu_model() -> Optional[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def default_device_spec() -> str:
    return os.environ.get("MBLAST_DEVICE", "cpu") or "cpu"


def warm_imports() -> None:
    """What evaluations import on first use, imported before the ready line so that a pre-started
    worker has paid for it: the dispatch modes behind op recording and FLOP counting, and
    torch.compile's compiler stack (Dynamo and Inductor, 2.6-3.7 s of a compiled candidate's load
    on the H200 otherwise)."""
    _warm_compiler()
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Noop(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    with _Noop():
        torch.ones(2).add(1)
    try:
        from torch.utils.flop_counter import FlopCounterMode  # type: ignore[import-not-found]

        with FlopCounterMode(display=False):
            torch.ones(2, 2).mm(torch.ones(2, 2))
    except ImportError:
        pass


def _warm_compiler() -> None:
    """Imports only: nothing is compiled and no compiler setting changes. Torch before 2.0 has no
    torch.compile, and a build without Inductor's dependencies (Triton, say) fails to import it;
    either way the candidate that needs it reports the failure itself."""
    try:
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
    except Exception:  # noqa: BLE001
        pass
