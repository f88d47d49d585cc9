import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Writes only the first half of an uninitialised output."""

    def __init__(self, *args) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        half = x.shape[0] // 2
        out[:half] = torch.relu(x[:half])
        return out
