import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication C = A @ B of small square matrices. One of mblast's native-backend
    problems."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


m = 64
k = 64
n = 64


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
