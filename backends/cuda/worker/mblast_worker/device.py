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
