"""Checking one candidate result against reference outputs (used after the trials)."""

from typing import Any, List

import torch

from .compare import Tol, passes
from .outputs import output_list


def matches(raw: Any, ref: List[torch.Tensor], tol: Tol, rel_floor: float, rel_l2_limit: float) -> bool:
    """Whether raw passes against ref as a trial would. rel_floor only scales max_rel_err, which
    the verdict does not use; it is kept so that callers state the same parameters as diff()."""
    outs = output_list(raw)
    if outs is None or len(outs) != len(ref):
        return False
    for out, r in zip(outs, ref):
        if not isinstance(out, torch.Tensor):
            return False
        plain = out.as_subclass(torch.Tensor) if type(out) is not torch.Tensor else out
        if tuple(plain.shape) != tuple(r.shape):
            return False
        if not passes(plain, r, tol, rel_l2_limit):
            return False
    return True
