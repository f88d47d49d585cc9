import torch
import torch.nn as nn


class Model(nn.Module):
    """A correct ReLU whose class is still named Model: the author forgot ModelNew."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0.0)
