"""The most bytes that tensors made by torch ops held at once inside a block: what a computation
adds to the memory its inputs already take (what the GPU's allocator would count, measured on
any device). Views and in-place results share their inputs' storage and count nothing."""

import weakref
from typing import Any, Dict, Set

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class LiveBytes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._owned: Dict[int, int] = {}  # storage address -> bytes, for storages ops made here

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        seen: Set[int] = {_address(t) for t in tree_flatten((args, kwargs or {}))[0] if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and _address(t) not in seen and _address(t) not in self._owned:
                self._take(t)
        return out

    def _take(self, t: torch.Tensor) -> None:
        address, size = _address(t), _storage_bytes(t)
        self._owned[address] = size
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(t, self._drop, address)

    def _drop(self, address: int) -> None:
        self.live -= self._owned.pop(address, 0)


def _storage(t: torch.Tensor) -> Any:
    untyped = getattr(t, "untyped_storage", None)  # PyTorch 2; 1.13 has storage() alone
    return untyped() if untyped is not None else t.storage()


def _address(t: torch.Tensor) -> int:
    return _storage(t).data_ptr() if t.numel() else id(t)


def _storage_bytes(t: torch.Tensor) -> int:
    return _storage(t).nbytes() if t.numel() else 0
