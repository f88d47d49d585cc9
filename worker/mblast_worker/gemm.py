"""Whether a problem's forward is one matrix product of tensors its bundle holds, so that a tuned
BLAS library (CLBlast on OpenCL) can stand as a baseline for it.

The forward is run once under a dispatch mode that records its aten ops. It is GEMM-shaped when
every op but one only makes a view of its input (view, reshape without a copy, transpose, permute,
expand, slice, ...), the one left is `mm` or `bmm` of float32 operands whose memory is an input or
a parameter of the bundle, read in place (row-major, or transposed, with any leading dimension and
offset), and the forward returns one contiguous float32 tensor whose memory is the product's. The
record names the bundle tensors, so the baseline reads the bundle's own buffers:

    {"op": "mm" | "bmm", "batch": B, "m": M, "n": N, "k": K,
     "a": {"tensor": "input0", "transposed": false, "offset": 0, "ld": K, "batch_stride": M * K},
     "b": {...}, "c": {"tensor": "output0", "transposed": false, "offset": 0, "ld": N, "batch_stride": M * N}}

where op(A) is M x K, op(B) is K x N and C = op(A) op(B) per batch, all row-major; offsets, leading
dimensions and strides are in elements. Nothing here looks at the problem's name.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Ops whose result is a view of their input: they move no data and compute nothing.
_VIEWS = frozenset({
    "view", "_unsafe_view", "_reshape_alias", "reshape", "alias", "as_strided", "expand", "expand_as",
    "permute", "transpose", "t", "squeeze", "unsqueeze", "slice", "select", "narrow", "detach",
    "lift_fresh", "view_as", "flatten", "unflatten",
})
_PRODUCTS = frozenset({"mm", "bmm"})


class _Recorder(TorchDispatchMode):
    """Every aten op of a call, with its arguments and result (kept alive, so that the data
    pointers compared later stay those of the call)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: List[Tuple[str, Sequence[Any], Any]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.calls.append((func.overloadpacket.__name__, args, out))
        return out


def _storage_ptr(t: torch.Tensor) -> int:
    return t.storage().data_ptr()


def _layout(rows: int, cols: int, row_stride: int, col_stride: int) -> Optional[Tuple[bool, int]]:
    """(transposed, leading dimension) of a rows x cols matrix read with these strides by a
    row-major BLAS, or None when it is neither row-major nor transposed in memory."""
    if (cols == 1 or col_stride == 1) and (rows == 1 or row_stride >= cols):
        return False, max(cols, row_stride if rows > 1 else cols)
    if (rows == 1 or row_stride == 1) and (cols == 1 or col_stride >= rows):
        return True, max(rows, col_stride if cols > 1 else rows)
    return None


def _operand(t: torch.Tensor, sources: Dict[int, Tuple[str, torch.Tensor]], what: str) -> Dict[str, Any]:
    """The record of one operand of the product (its last two dimensions the matrix), or a
    ValueError saying why the bundle's memory cannot be read that way."""
    if t.dtype != torch.float32:
        raise ValueError(f"{what} is {t.dtype}, not float32")
    found = sources.get(_storage_ptr(t))
    if found is None:
        raise ValueError(f"{what} is not the memory of an input or parameter (it was computed or copied)")
    name, source = found
    if not source.is_contiguous() or source.dtype != torch.float32:
        raise ValueError(f"{what} is {name}, which is not a contiguous float32 tensor")
    rows, cols = int(t.shape[-2]), int(t.shape[-1])
    layout = _layout(rows, cols, t.stride(-2), t.stride(-1))
    if layout is None:
        raise ValueError(f"{what} reads {name} with strides {t.stride()}, neither row-major nor transposed")
    batch = int(t.shape[0]) if t.dim() == 3 else 1
    batch_stride = t.stride(0) if t.dim() == 3 else 0
    offset = t.storage_offset() - source.storage_offset()
    last = offset + (batch - 1) * batch_stride + (rows - 1) * t.stride(-2) + (cols - 1) * t.stride(-1)
    if offset < 0 or last >= source.numel():
        raise ValueError(f"{what} reads outside {name}")
    transposed, ld = layout
    return {"tensor": name, "transposed": transposed, "offset": offset, "ld": ld, "batch_stride": batch_stride}


def _product(calls: List[Tuple[str, Sequence[Any], Any]]) -> Tuple[str, Sequence[Any], Any]:
    computing = [c for c in calls if c[0] not in _VIEWS]
    names = [c[0] for c in computing]
    if len(computing) != 1 or names[0] not in _PRODUCTS:
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "") or "no op"
        raise ValueError(f"the forward computes with {shown}, not one mm or bmm")
    return computing[0]


def _record(calls: List[Tuple[str, Sequence[Any], Any]], outputs: List[torch.Tensor],
            sources: Dict[int, Tuple[str, torch.Tensor]]) -> Dict[str, Any]:
    op, args, result = _product(calls)
    a, b = args[0], args[1]
    if len(outputs) != 1:
        raise ValueError(f"the forward returns {len(outputs)} tensors, not one")
    out = outputs[0]
    if out.dtype != torch.float32 or not out.is_contiguous() or not result.is_contiguous():
        raise ValueError("the forward's output is not the product's contiguous float32 result")
    if _storage_ptr(out) != _storage_ptr(result) or out.storage_offset() != result.storage_offset():
        raise ValueError("the forward's output is not the product's memory (it was copied or changed)")
    batch = int(a.shape[0]) if op == "bmm" else 1
    m, k, n = int(a.shape[-2]), int(a.shape[-1]), int(b.shape[-1])
    if out.numel() != batch * m * n:
        raise ValueError("the forward's output is not the whole product")
    return {"op": op, "batch": batch, "m": m, "n": n, "k": k,
            "a": _operand(a, sources, "A"), "b": _operand(b, sources, "B"),
            "c": {"tensor": "output0", "transposed": False, "offset": 0, "ld": n, "batch_stride": m * n}}


def gemm_shape(model: torch.nn.Module, inputs: List[Any],
               params: List[Tuple[str, torch.Tensor]]) -> Tuple[Optional[Dict[str, Any]], str]:
    """(the record, "") when the forward on `inputs` is one GEMM of the bundle's tensors
    (inputs named input<i>, parameters by their state_dict names); else (None, why not)."""
    copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    sources: Dict[int, Tuple[str, torch.Tensor]] = {}
    for name, t in params:
        sources.setdefault(_storage_ptr(t), (name, t))
    for i, x in enumerate(copies):
        if isinstance(x, torch.Tensor):
            sources.setdefault(_storage_ptr(x), (f"input{i}", x))
    recorder = _Recorder()
    with torch.no_grad(), recorder:
        value = model(*copies)
    outputs = list(value) if isinstance(value, (tuple, list)) else [value]
    if not all(isinstance(t, torch.Tensor) for t in outputs):
        return None, "the forward does not return tensors"
    try:
        return _record(recorder.calls, outputs, sources), ""
    except ValueError as exc:
        return None, str(exc)
