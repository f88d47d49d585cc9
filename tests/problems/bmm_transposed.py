import torch
import torch.nn as nn


class Model(nn.Module):
    """A batched product with its second operand read transposed: C[i] = A[i] @ B[i]^T, with
    sizes that are no multiple of a tile."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b.transpose(1, 2))


def get_inputs():
    return [torch.randn(3, 17, 12), torch.randn(3, 20, 12)]


def get_init_inputs():
    return []
