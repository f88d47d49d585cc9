import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct values, but computed in place in the caller's input."""

    def __init__(self, *args) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.clamp_(min=0)
        return x.clone()
