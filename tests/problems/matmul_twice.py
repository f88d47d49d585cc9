import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for 320x320 matrices, computed twice (the second product discarded): a reference
    an honest candidate can beat by 2x on any device."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.matmul(a, b)
        torch.matmul(b, a)
        return c


N = 320


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
