"""A window as a module of its own (the region an agent rewrites), and the model with one window
replaced by another module while the rest stays as it was (both in cut.py); checks that the two
compute the same."""

from typing import Any, Tuple

import torch

from .cut import region_module, replace_region

__all__ = ["region_module", "replace_region", "outputs_of", "same_values", "same_outputs"]


def outputs_of(module: torch.nn.Module, inputs: Any) -> Tuple[Any, ...]:
    """The module's outputs on the inputs, as a tuple, without autograd."""
    with torch.no_grad():
        out = module(*inputs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def same_values(xs: Tuple[Any, ...], ys: Tuple[Any, ...]) -> bool:
    """Exactly equal (a region cut out and put back computes the same ops in the same order)."""
    return len(xs) == len(ys) and all(torch.equal(p, q) for p, q in zip(xs, ys))


def same_outputs(a: torch.nn.Module, b: torch.nn.Module, inputs: Any) -> bool:
    """Whether two modules give exactly the same values on the inputs."""
    return same_values(outputs_of(a, inputs), outputs_of(b, inputs))
