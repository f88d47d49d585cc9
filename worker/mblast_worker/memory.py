"""The judge's own device-memory peak over a request, whatever resets PyTorch's peak statistics
on the way (measuring eager's peak does)."""

from typing import Any, Dict, Optional

import torch

_peaks: Dict[str, int] = {"reserved": 0, "allocated": 0, "window": 0}


def _read(device: torch.device) -> None:
    allocated = int(torch.cuda.max_memory_allocated(device))
    _peaks["reserved"] = max(_peaks["reserved"], int(torch.cuda.max_memory_reserved(device)))
    _peaks["allocated"] = max(_peaks["allocated"], allocated)
    _peaks["window"] = max(_peaks["window"], allocated)


def release_cached_blocks(device: torch.device) -> None:
    """Frees the allocator's cached, unused device blocks before a large allocation: blocks of
    other sizes cannot serve it and would otherwise count in the judge's reserved peak beside it."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def reset_peak(device: torch.device) -> None:
    """torch.cuda.reset_peak_memory_stats, keeping what the judge's peak was so far."""
    _read(device)
    torch.cuda.reset_peak_memory_stats(device)


def restart(device: torch.device) -> None:
    """The judge's peak counts from now: the next problem of a request that judges several
    (workloads.py), whose report must not carry the ones before."""
    if device.type != "cuda":
        return
    torch.cuda.reset_peak_memory_stats(device)
    allocated = int(torch.cuda.memory_allocated(device))
    _peaks.update(reserved=int(torch.cuda.memory_reserved(device)), allocated=allocated, window=allocated)


def take_window(device: torch.device) -> int:
    """The allocated peak since the previous take_window (or the start), whatever reset PyTorch's
    statistics in between; a new window starts at what is allocated now (phases.py)."""
    _read(device)
    value = _peaks["window"]
    torch.cuda.reset_peak_memory_stats(device)
    _peaks["window"] = int(torch.cuda.memory_allocated(device))
    return value


def report(device: torch.device, eager_peak: Optional[int], plan: str) -> Optional[Dict[str, Any]]:
    """{"judge_peak_bytes" (reserved by PyTorch's allocator), "judge_peak_allocated_bytes",
    "eager_peak_bytes", "budget_bytes" (2 x eager + 1 GiB), "within_budget", "reference_plan"}."""
    if device.type != "cuda":
        return None
    _read(device)
    budget = 2 * eager_peak + (1 << 30) if eager_peak is not None else None
    return {"judge_peak_bytes": _peaks["reserved"], "judge_peak_allocated_bytes": _peaks["allocated"],
            "eager_peak_bytes": eager_peak, "budget_bytes": budget,
            "within_budget": None if budget is None else _peaks["reserved"] <= budget, "reference_plan": plan}
