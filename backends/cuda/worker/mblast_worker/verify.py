"""Checking one candidate result against reference outputs (used after the trials)."""

from typing import Any, List

import torch

from .compare import Tol, diff
from .outputs import output_list


def matches(raw: Any, ref: List[torch.Tensor], tol: Tol, rel_floor: float, rel_l2_limit: float) -> bool:
    outs = output_list(raw)
    if outs is None or len(outs) != len(ref):
        return False
    for out, r in zip(outs, ref):
        if not isinstance(out, torch.Tensor):
            return False
        plain = out.as_subclass(torch.Tensor) if type(out) is not torch.Tensor else out
        if tuple(plain.shape) != tuple(r.shape):
            return False
        if not diff(plain, r, tol, rel_floor).passes(rel_l2_limit):
            return False
    return True
