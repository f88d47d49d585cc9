"""FLOPs of one forward, counted over the aten ops it dispatches (any torch with
TorchDispatchMode, 1.13 included, which has no torch.utils.flop_counter).

The rules, per aten op (by its overload packet's name):
- matrix products (mm, addmm, bmm, baddbmm, matmul's pieces) and convolutions: 2 x multiply-adds,
  the bias left out, as torch.utils.flop_counter counts them;
- softmax and log-softmax: 5 per input element (max, subtract, exp, sum, divide or log);
- reductions (sum, mean, amax, ...): 1 per input element;
- ops that only move, view, copy or create data (view, reshape, cat, clone, zeros, ...): 0;
- any other op with a floating-point result: 1 per output element (elementwise arithmetic).

FLOPs are also kept per arithmetic unit (`unit_of`): "conv" (convolutions, which cuDNN runs in TF32
under PyTorch's defaults), "matmul" (matrix products and attention, TF32 only where asked) and "other";
the speed of light divides each by its own peak (costmodel.sol_ms).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_SOFTMAX = frozenset({"_softmax", "_log_softmax", "softmax", "log_softmax"})
_SOFTMAX_FLOPS_PER_ELEMENT = 5
_REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "linalg_vector_norm",
                         "var", "std", "var_mean", "std_mean", "logsumexp", "cumsum", "cumprod", "argmax",
                         "argmin", "all", "any"})
_DATA_MOVEMENT = frozenset({
    "view", "_unsafe_view", "reshape", "alias", "as_strided", "expand", "permute", "transpose", "t",
    "squeeze", "unsqueeze", "flatten", "unflatten", "slice", "select", "narrow", "split", "split_with_sizes",
    "chunk", "unbind", "cat", "stack", "clone", "copy_", "_to_copy", "to", "contiguous", "detach", "lift_fresh",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "fill_", "zero_", "new_zeros", "new_ones", "new_full", "arange",
    "index", "index_select", "gather", "scatter", "index_put_", "masked_fill", "where", "constant_pad_nd",
    "repeat", "roll", "flip", "_reshape_alias", "view_as", "resize_", "set_", "pad", "embedding",
    "scalar_tensor", "_local_scalar_dense", "rand", "randn", "rand_like", "randn_like", "bernoulli_",
})


def _numel(shape: Sequence[int]) -> int:
    return int(math.prod(int(s) for s in shape))


def _matmul_flops(name: str, args: Sequence[Any]) -> int:
    """2 x multiply-adds of mm, addmm, bmm and baddbmm (operands after any bias)."""
    a, b = (args[1], args[2]) if name in ("addmm", "baddbmm", "addbmm") else (args[0], args[1])
    batch = _numel(a.shape[:-2])
    return 2 * batch * int(a.shape[-2]) * int(a.shape[-1]) * int(b.shape[-1])


def _convolution_flops(args: Sequence[Any], out: torch.Tensor) -> int:
    """2 x multiply-adds of aten.convolution (input, weight, bias, stride, padding, dilation,
    transposed, output_padding, groups)."""
    x, weight = args[0], args[1]
    transposed = bool(args[6]) if len(args) > 6 else False
    window = _numel(weight.shape[2:])
    if transposed:  # weight [in, out / groups, k...]: every input element feeds out/groups x k
        return 2 * _numel(x.shape) * int(weight.shape[1]) * window
    return 2 * _numel(out.shape) * int(weight.shape[1]) * window  # weight [out, in / groups, k...]


_MATMULS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul"})


def unit_of(name: str) -> str:
    """The arithmetic unit an aten op's FLOPs run on, by its overload packet's name: "conv" for
    convolutions, "matmul" for matrix products and attention (torch.utils.flop_counter's
    scaled-dot-product ops included), "other" for the rest."""
    if "convolution" in name:
        return "conv"
    if name in _MATMULS or "attention" in name:
        return "matmul"
    return "other"


def op_flops(func: Any, args: Sequence[Any], out: Any) -> int:
    """FLOPs of one aten op call under the rules of this module's docstring."""
    name = func.overloadpacket.__name__
    if name in ("mm", "addmm", "bmm", "baddbmm", "addbmm"):
        return _matmul_flops(name, args)
    if name in ("convolution", "_convolution"):
        return _convolution_flops(args, out)
    first = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if name in _SOFTMAX and first is not None:
        return _SOFTMAX_FLOPS_PER_ELEMENT * first.numel()
    if name in _REDUCTIONS and first is not None:
        return first.numel()
    if name in _DATA_MOVEMENT:
        return 0
    results = out if isinstance(out, (tuple, list)) else (out,)
    return sum(t.numel() for t in results if isinstance(t, torch.Tensor) and t.is_floating_point())


class DispatchFlopCounter(TorchDispatchMode):
    """Counts FLOPs per arithmetic unit over the aten ops dispatched while it is entered."""

    def __init__(self) -> None:
        super().__init__()
        self.by_unit: Dict[str, float] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        flops = op_flops(func, args, out)
        if flops:
            unit = unit_of(func.overloadpacket.__name__)
            self.by_unit[unit] = self.by_unit.get(unit, 0.0) + flops
        return out


def count_dispatch_flops_by_unit(call: Callable[[], Any]) -> Dict[str, float]:
    """FLOPs of one call of `call` per arithmetic unit, counted over the aten ops it dispatches."""
    counter = DispatchFlopCounter()
    with torch.no_grad(), counter:
        call()
    return counter.by_unit


def count_dispatch_flops(call: Callable[[], Any]) -> float:
    """FLOPs of one call of `call`, counted over the aten ops it dispatches."""
    return float(sum(count_dispatch_flops_by_unit(call).values()))
