import torch
import torch.nn as nn


class Model(nn.Module):
    """Outputs around 1e-6: an all-zero answer is inside atol=1e-4 everywhere."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.scale


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [1e-6]
