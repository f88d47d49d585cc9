"""Filling memory the allocator will hand out next with a recognisable poison.

CUDA: every free block in PyTorch's caching allocator (read from memory_snapshot) is
filled in place, plus one large fresh block (capped at 2 GiB) that is freed back into the
cache, so a candidate's torch.empty, or a read of freed reference memory, sees poison.

CPU: the CPU allocator is malloc, so nothing can be targeted exactly. The worker fills
scratch tensors of the expected output sizes and frees them; glibc then tends to hand the
same chunks to the next allocations of that size, but it writes its own bookkeeping into a
freed chunk's first bytes and returns fresh (zeroed) pages for large or trimmed blocks.
So on CPU an uninitialised output is caught when it reuses a poisoned chunk (small
outputs, typically); otherwise it holds zeros or stale data, and is caught only if that
makes it wrong or mostly zero.
"""

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch

from . import guards

SENTINEL: float = 1.0e30
_CUDA_CAP_BYTES: int = 2 << 30
_CPU_CAP_BYTES: int = 256 << 20


class PoisonMode(enum.Enum):
    NAN = "nan"
    SENTINEL = "sentinel"

    @property
    def value_f32(self) -> float:
        return float("nan") if self is PoisonMode.NAN else SENTINEL


class _DeviceMemory:
    """Exposes a raw device range through __cuda_array_interface__ so torch can fill it."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__: Dict[str, Any] = {
            "shape": (nbytes // 4,),
            "typestr": "<f4",
            "data": (ptr, False),
            "version": 2,
            "strides": None,
        }


@dataclass
class Poisoner:
    device: torch.device
    fresh_bytes: int = _CUDA_CAP_BYTES  # the fresh block filled before each call (CUDA), at most
    budget_bytes: Optional[int] = None  # device memory the judge keeps within (CUDA)
    # Bytes of the tensors the candidate is expected to allocate (CPU only).
    expected_nbytes: List[int] = field(default_factory=list)
    cached_blocks_filled: int = 0
    snapshot_works: bool = True

    def poison(self, mode: PoisonMode) -> None:
        if self.device.type == "cuda":
            self._poison_cuda(mode.value_f32)
        else:
            self._poison_cpu(mode.value_f32)

    def _poison_cpu(self, value: float) -> None:
        for size in self.expected_nbytes:
            n = min(size, _CPU_CAP_BYTES) // 4
            if n <= 0:
                continue
            # Several same-size chunks held at once plus one larger block, then all freed:
            # measured with glibc, this is what makes the next allocations of that size
            # land in poisoned memory most reliably (one chunk alone often does not).
            count = max(1, min(8, _CPU_CAP_BYTES // (4 * n)))
            blocks = [torch.empty(n, dtype=torch.float32).fill_(value) for _ in range(count)]
            blocks.append(torch.empty(min(4 * n, _CPU_CAP_BYTES // 4), dtype=torch.float32).fill_(value))
            del blocks

    def _poison_cuda(self, value: float) -> None:
        guards.cuda_synchronize(self.device)
        free_bytes, _total = torch.cuda.mem_get_info(self.device)
        size = min(int(free_bytes * 0.5), self.fresh_bytes)
        if self.budget_bytes is not None:
            # The block goes back to the cache, where the call's outputs take it: it may use what
            # the budget leaves beside the memory already reserved.
            size = min(size, self.budget_bytes - torch.cuda.memory_reserved(self.device))
        else:
            size = min(size, _CUDA_CAP_BYTES)
        size = max(0, size) // 4 * 4
        if size > 0:
            try:
                block = torch.empty(size, dtype=torch.uint8, device=self.device)
                block.view(torch.float32).fill_(value)
                del block
            except RuntimeError:  # out of memory: the cached-block pass below still runs
                pass
        if self.snapshot_works:
            try:
                self._fill_cached_free_blocks(value)
            except Exception:  # noqa: BLE001 - e.g. the cudaMallocAsync backend has no snapshot
                self.snapshot_works = False
        guards.cuda_synchronize(self.device)

    def _fill_cached_free_blocks(self, value: float) -> None:
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        filled = 0
        for segment in torch.cuda.memory_snapshot():
            if segment.get("device", index) != index or segment.get("is_expandable", False):
                # Expandable segments may have unmapped holes: writing there would fault.
                continue
            address = int(segment["address"])
            for block in segment.get("blocks", []):
                size = int(block["size"])
                address = int(block.get("address", address))
                if block.get("state") == "inactive" and size >= 4:
                    raw = torch.as_tensor(_DeviceMemory(address, size), device=self.device)
                    raw.fill_(value)
                    filled += 1
                address += size
        self.cached_blocks_filled = filled
