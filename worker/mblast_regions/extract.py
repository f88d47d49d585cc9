"""A window as a module of its own (the region an agent rewrites), and the model with one window
replaced by another module while the rest stays as it was (both in cut.py); checks that the two
compute the same."""

import re
from typing import Any, Tuple

import torch
from torch.fx import GraphModule

from .cut import region_module, replace_region

__all__ = ["region_module", "replace_region", "region_code", "outputs_of", "same_values", "same_outputs"]

MAX_CODE_CHARS = 6000  # what an agent is shown of one region


def region_code(region: GraphModule) -> str:
    """A window cut out as a module (region_module) as Python an agent can read: the submodules it
    calls, each with its settings, then the forward torch.fx writes for it (its arguments the window's
    inputs, in order)."""
    called = dict.fromkeys(str(node.target) for node in region.graph.nodes if node.op == "call_module")
    lines = [f"# self.{name} = {region.get_submodule(name)!r}" for name in called]
    # torch.fx frees each value after its last use ("conv = self.conv(x);  x = None"): noise to a reader.
    forward = re.sub(r";\s+(?:\w+ = )+None", "", region.code.strip())
    code = "\n".join(lines + [forward])
    return code if len(code) <= MAX_CODE_CHARS else code[:MAX_CODE_CHARS] + "\n# ... (cut)"


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
