import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer without bias on a 3-D input: y = x W^T, the weight a parameter read
    transposed."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def get_inputs():
    return [torch.randn(2, 9, 24)]


def get_init_inputs():
    return [24, 10]
