import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise: swish (x * sigmoid(x)) over a vector. One of mblast's native-backend problems."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


n = 16384


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
