import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the rows of a matrix. One of mblast's native-backend problems."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


rows = 32
cols = 512


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
