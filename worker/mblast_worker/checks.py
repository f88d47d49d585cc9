"""Structural checks on what a candidate returned, against the eager reference's outputs."""

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import torch

from .outputs import kind_error, output_list
from .tensors import dtype_name, flat_tensors, is_dense, spans_overlap, storage_span


@dataclass
class Structure:
    outputs: List[torch.Tensor]  # plain, dense tensors ready to compare
    flags: List[str]
    error_kind: Optional[str] = None
    error: Optional[str] = None


def _fail(kind: str, message: str) -> Structure:
    return Structure([], [], kind, message)


@dataclass(frozen=True)
class Expected:
    """What one output must be: the reference's shape, dtype and device."""

    shape: Tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    dense: bool = True

    @staticmethod
    def of(t: torch.Tensor) -> "Expected":
        return Expected(tuple(t.shape), t.dtype, t.device, is_dense(t))


def check_structure(raw: Any, expected: List[Expected]) -> Structure:
    outs = output_list(raw)
    if outs is None:
        return _fail("shape", kind_error(raw))
    if len(outs) != len(expected):
        return _fail("shape", f"forward returned {len(outs)} outputs, expected {len(expected)}")
    flags: List[str] = []
    plain: List[torch.Tensor] = []
    for i, (out, exp) in enumerate(zip(outs, expected)):
        if not isinstance(out, torch.Tensor):
            return _fail("shape", f"output {i} is {type(out).__name__}, expected a tensor")
        if type(out) is not torch.Tensor:
            flags.append("tensor_subclass_output")
            try:
                out = out.as_subclass(torch.Tensor)
            except Exception as exc:  # noqa: BLE001
                return Structure([], flags, "cheat", f"output {i} is a {type(out).__name__} that cannot be read as a tensor: {exc}")
        if tuple(out.shape) != tuple(exp.shape):
            return _fail("shape", f"output {i} has shape {list(out.shape)}, expected {list(exp.shape)}")
        if out.dtype != exp.dtype:
            return _fail("dtype", f"output {i} has dtype {dtype_name(out.dtype)}, expected {dtype_name(exp.dtype)}")
        if out.device != exp.device:
            return _fail("dtype", f"output {i} is on {out.device}, expected {exp.device}")
        if not is_dense(out) and exp.dense:
            flags.append("non_dense_output")
            out = out.to_dense() if out.layout != torch.strided else out.contiguous()
        plain.append(out)
    return Structure(plain, flags)


def aliases_anything(outputs: List[torch.Tensor], inputs: List[Any], model: torch.nn.Module) -> List[str]:
    """Descriptions of every output whose storage overlaps an input, a parameter/buffer or another output."""
    others: List[Tuple[str, Any]] = [(f"input {j}", storage_span(t)) for j, t in enumerate(flat_tensors(inputs))]
    others += [(f"parameter {n}", storage_span(t)) for n, t in model.state_dict(keep_vars=True).items()
               if isinstance(t, torch.Tensor)]
    spans = [storage_span(o) for o in outputs]
    found: List[str] = []
    for i, span in enumerate(spans):
        if span is None:
            continue
        for label, other in others + [(f"output {j}", spans[j]) for j in range(len(spans)) if j != i]:
            if other is not None and spans_overlap(span, other):
                found.append(f"output {i} shares memory with {label}")
                break
    return found
