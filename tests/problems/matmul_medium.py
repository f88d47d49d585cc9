import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for 320x320 matrices: compute outweighs reading the inputs."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


N = 320


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
