"""The bytes a forward's aten ops read and write, each op's tensors counted once per op: the
traffic of the implementation as it runs op by op, beside the problem's minimal bytes (each
input, parameter and output once). An unfused chain of elementwise ops after a convolution moves
its activation several times; its minimal bytes do not show that (issue 27: convolutions with
epilogues read compute-bound by intensity from minimal bytes, memory-bound by Nsight Compute).

Views move nothing; an op that writes into an argument (in place, or `out=`) writes it, and reads
it only where it is not an `out` argument; allocating without writing (`empty`) moves nothing."""

from typing import Any, Callable, List

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

_ALLOCATES_ONLY = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


def _tensor_bytes(values: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tree_flatten(values)[0] if isinstance(t, torch.Tensor))


def _is_view(func: Any) -> bool:
    return any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)


def _read_arguments(func: Any, args: Any, kwargs: Any) -> List[Any]:
    """The arguments an op reads: all but its `out` ones."""
    schema_args = func._schema.arguments
    positional = [a for i, a in enumerate(args) if not _is_out(schema_args, i)]
    named = [v for k, v in kwargs.items() if not k.startswith("out")]
    return positional + named


def _is_out(schema_args: Any, index: int) -> bool:
    if index >= len(schema_args):
        return False
    arg = schema_args[index]
    return arg.name.startswith("out") and arg.alias_info is not None and arg.alias_info.is_write


class TrafficCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(getattr(func, "overloadpacket", None), "__name__", "")
        if name not in _ALLOCATES_ONLY and not _is_view(func):
            self.bytes += _tensor_bytes(_read_arguments(func, args, kwargs)) + _tensor_bytes(out)
        return out


def count_moved_bytes(call: Callable[[], Any]) -> int:
    """The bytes one call's aten ops read and write (see the module's docstring)."""
    counter = TrafficCounter()
    with counter:
        call()
    return counter.bytes
