"""nvcc for candidates: the shared build recipe (nvcc_build.json), the cache key, the cache and the
compile itself. cuda_build.cpp computes the same key from the same recipe."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

# How candidate CUDA is built, shared with cuda_build.cpp: nvcc_build.json beside this package.
_BUILD: Dict[str, Any] = json.loads((Path(__file__).resolve().parent.parent / "nvcc_build.json").read_text())
BASE_FLAGS: Tuple[str, ...] = tuple(_BUILD["base_flags"])
TRAILING_FLAGS: Tuple[str, ...] = tuple(_BUILD["trailing_flags"])
HELPER_SUFFIX: str = _BUILD["helper_suffix"]
GENCODE: str = _BUILD["gencode"]

BUILD_TIMEOUT_S: float = 180.0
LOG_LIMIT: int = 8192
_ARCH_RE = re.compile(r"sm_([0-9]+[a-z]?)")


class CudaBuildError(RuntimeError):
    """nvcc rejected the source. The message is nvcc's output, trimmed to LOG_LIMIT characters."""

    def __init__(self, message: str, log: str = "", key: str = "") -> None:
        super().__init__(message)
        self.log: str = log
        self.key: str = key


class CudaToolkitError(RuntimeError):
    """No usable nvcc: a setup problem, not a fault of the candidate."""




def _validate_arch(arch: str) -> str:
    if not _ARCH_RE.fullmatch(arch):
        raise ValueError(f"CUDA architecture {arch!r} is not of the form sm_90 / sm_90a")
    return arch


def detect_arch() -> str:
    """sm_XY of the current GPU; else $MBLAST_CUDA_ARCH; else sm_90."""
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"
    env = os.environ.get("MBLAST_CUDA_ARCH", "").strip()
    return _validate_arch(env) if env else "sm_90"


def nvcc_flags(arch: str, extra_flags: Sequence[str] = ()) -> List[str]:
    number = _ARCH_RE.fullmatch(_validate_arch(arch))
    assert number is not None
    code = number.group(1)
    return [*BASE_FLAGS, "-gencode", GENCODE.format(code=code), *TRAILING_FLAGS, *extra_flags]


def final_source(source: str) -> str:
    """The exact text nvcc compiles: the candidate's source plus the error helpers."""
    return source + HELPER_SUFFIX


def _key_for(text: str, flags: Sequence[str], arch: str) -> str:
    material = text + "\0" + " ".join(flags) + "\0" + arch
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def cache_key(source: str, *, arch: Optional[str] = None, extra_flags: Sequence[str] = ()) -> str:
    arch = detect_arch() if arch is None else arch
    return _key_for(final_source(source), nvcc_flags(arch, extra_flags), arch)


def cache_dir() -> Path:
    env = os.environ.get("MBLAST_CUDA_CACHE", "")
    return Path(env) if env else Path.home() / ".cache" / "mblast" / "cuda"


def find_nvcc() -> Optional[str]:
    """$MBLAST_NVCC when set (and only then), else nvcc on PATH, else /usr/local/cuda/bin/nvcc."""
    env = os.environ.get("MBLAST_NVCC", "")
    if env:
        if "/" not in env:
            return shutil.which(env)
        return env if _executable(env) else None
    found = shutil.which("nvcc")
    if found:
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if _executable(default) else None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _trim(log: str, log_path: Path) -> str:
    if len(log) <= LOG_LIMIT:
        return log
    rest = len(log) - LOG_LIMIT
    return f"{log[:LOG_LIMIT]}\n[... {rest} more characters of nvcc output in {log_path}]"


def _compile(text: str, flags: Sequence[str], key: str, directory: Path) -> None:
    nvcc = find_nvcc()
    if nvcc is None:
        raise CudaToolkitError(
            "nvcc not found: set MBLAST_NVCC, put nvcc on PATH or install CUDA in /usr/local/cuda"
        )
    directory.mkdir(parents=True, exist_ok=True)
    source_path = directory / f"{key}.cu"
    log_path = directory / f"{key}.log"
    _write_atomic(source_path, text.encode("utf-8"))
    tmp = directory / f"{key}.tmp-{os.getpid()}-{secrets.token_hex(4)}.so"
    command = [nvcc, *flags, "-o", str(tmp), str(source_path)]
    # A session of its own so that a timeout also ends cicc and ptxas.
    proc = subprocess.Popen(
        command,
        cwd=directory,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=BUILD_TIMEOUT_S)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        timed_out = True
    log = output.decode("utf-8", "replace")
    if timed_out:
        log += f"\nnvcc timed out after {BUILD_TIMEOUT_S:.0f} s\n"
    _write_atomic(log_path, log.encode("utf-8"))
    if timed_out or proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        message = _trim(log, log_path) if log.strip() else f"nvcc exited with {proc.returncode}"
        raise CudaBuildError(message, log, key)
    os.replace(tmp, directory / f"{key}.so")


@functools.lru_cache(maxsize=None)
def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch
