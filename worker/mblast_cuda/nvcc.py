"""Building a candidate's CUDA source: through mblast's one nvcc driver, `mblast internal
cuda-build` (backends/cuda/cuda_build.cpp), which owns the recipe, the cache key, the cache, the
nvcc lookup and the architecture. The judge pre-builds the sources it finds in a candidate file;
this asks the same driver for those (a cache hit) and for sources assembled at run time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

# nvcc's own limit is 180 s (cuda_build.hpp); this bounds the driver around it.
BUILD_TIMEOUT_S: float = 240.0
LOG_LIMIT: int = 8192


class CudaBuildError(RuntimeError):
    """nvcc rejected the source. The message is nvcc's output, trimmed to LOG_LIMIT characters."""

    def __init__(self, message: str, log: str = "", key: str = "") -> None:
        super().__init__(message)
        self.log: str = log
        self.key: str = key


class CudaToolkitError(RuntimeError):
    """No usable mblast or nvcc: a setup problem, not a fault of the candidate."""


@dataclass(frozen=True)
class Build:
    key: str
    artifact: Path
    cached: bool


def find_mblast() -> Optional[str]:
    """$MBLAST_BINARY (the judge sets it for its workers), else mblast on PATH."""
    env = os.environ.get("MBLAST_BINARY", "")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    return shutil.which("mblast")


def build_command(mblast: str, extra_flags: Sequence[str]) -> List[str]:
    """The driver's command line: the judge's architecture ($MBLAST_CUDA_ARCH, which it sets for
    its workers) when known, else the driver detects it; each extra flag as --flag=F."""
    command = [mblast, "internal", "cuda-build"]
    arch = os.environ.get("MBLAST_CUDA_ARCH", "").strip()
    if arch:
        command.append(f"--arch={arch}")
    command.extend(f"--flag={flag}" for flag in extra_flags)
    return command


def build(source: str, extra_flags: Sequence[str] = ()) -> Build:
    """The shared object for source, built now or found in the cache."""
    mblast = find_mblast()
    if mblast is None:
        raise CudaToolkitError(
            "mblast_cuda builds CUDA through the mblast binary, and none was found: judge the "
            "candidate with `mblast eval`, or set MBLAST_BINARY to mblast's path"
        )
    try:
        proc = subprocess.run(
            build_command(mblast, extra_flags),
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=BUILD_TIMEOUT_S,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as exc:
        raise CudaBuildError(f"the CUDA build timed out after {BUILD_TIMEOUT_S:.0f} s") from exc
    report = _report(proc)
    if report is None:
        stderr = proc.stderr.decode("utf-8", "replace").strip()
        raise CudaToolkitError(f"`mblast internal cuda-build` exited with {proc.returncode}: {stderr}")
    key, log = str(report["key"]), str(report["log"])
    if not report["ok"]:
        message = _trim(log, key) if log.strip() else "nvcc failed without output"
        raise CudaBuildError(message, log, key)
    return Build(key, Path(report["artifact"]), bool(report["cached"]))


def _report(proc: "subprocess.CompletedProcess[bytes]") -> Optional[dict]:
    if proc.returncode not in (0, 1):
        return None
    try:
        report = json.loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return report if isinstance(report, dict) and {"key", "ok", "log", "artifact"} <= set(report) else None


def _trim(log: str, key: str) -> str:
    if len(log) <= LOG_LIMIT:
        return log
    rest = len(log) - LOG_LIMIT
    return f"{log[:LOG_LIMIT]}\n[... {rest} more characters of nvcc output in {key}.log of the CUDA cache]"
