"""The problem cache, reached through one directory descriptor.

The driver opens the cache folder and hands the worker its descriptor (MBLAST_CACHE_FD) while
the sandbox hides the folder's path. The worker reads and writes the cache only before it imports
candidate code, then closes the descriptor: candidate code can neither read the stored references
nor forge an entry a later evaluation would trust. Without a descriptor (tests, `run`), the folder
is opened by path. A cache that cannot be read or written only costs a recomputation.
"""

import inspect
import io
import json
import os
from typing import Any, Optional

import torch

_LOAD_KW = {"weights_only": True} if "weights_only" in inspect.signature(torch.load).parameters else {}


class CacheDir:
    def __init__(self, fd: int) -> None:
        self.fd: Optional[int] = fd
        self.errors: list = []

    @staticmethod
    def open(path: Optional[str]) -> Optional["CacheDir"]:
        """The inherited descriptor if the driver passed one, else the folder at path."""
        passed = os.environ.pop("MBLAST_CACHE_FD", "")
        if passed.isdigit():
            try:
                os.fstat(int(passed))
                return CacheDir(int(passed))
            except OSError:
                pass
        if not path:
            return None
        try:
            os.makedirs(path, exist_ok=True)
            return CacheDir(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        except OSError:
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _read(self, name: str) -> Optional[bytes]:
        if self.fd is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def _write(self, name: str, data: bytes) -> None:
        """Atomically: written under a temporary name, then renamed over name."""
        if self.fd is None:
            return
        tmp = f".{name}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600, dir_fd=self.fd)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError as exc:
            self.errors.append(f"cache write failed ({name}): {exc}")
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass

    def read_json(self, name: str) -> Optional[Any]:
        data = self._read(name)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return None

    def write_json(self, name: str, value: Any) -> None:
        self._write(name, (json.dumps(value) + "\n").encode())

    def read_tensors(self, name: str) -> Optional[list]:
        data = self._read(name)
        if data is None:
            return None
        try:
            value = torch.load(io.BytesIO(data), map_location="cpu", **_LOAD_KW)
        except Exception:  # noqa: BLE001 - a broken entry only costs a recomputation
            return None
        return value if isinstance(value, list) and all(isinstance(t, torch.Tensor) for t in value) else None

    def write_tensors(self, name: str, tensors: list) -> None:
        buf = io.BytesIO()
        torch.save([t.detach().cpu() for t in tensors], buf)
        self._write(name, buf.getvalue())
