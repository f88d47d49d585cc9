import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A correct ReLU that fails when it is called in two grad modes in one process: shows that the
    judge calls a candidate (trials, checks, timing, profile) in one mode only, as a compiled module
    needs to compile one graph."""

    def __init__(self, *args) -> None:
        super().__init__()
        self.modes = set()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.modes.add(torch.is_grad_enabled())
        if len(self.modes) > 1:
            raise RuntimeError("called both with and without autograd recording")
        return torch.relu(x)
