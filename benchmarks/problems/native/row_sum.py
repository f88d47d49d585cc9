import torch
import torch.nn as nn


class Model(nn.Module):
    """Reduction: the sum of each row of a matrix. One of mblast's native-backend problems."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


rows = 64
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
