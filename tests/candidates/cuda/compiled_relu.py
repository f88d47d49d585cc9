import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """An honest candidate that uses torch.compile: must raise no flag."""

    def __init__(self, *args) -> None:
        super().__init__()
        self.fn = torch.compile(lambda x: torch.clamp_min(x, 0.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)
