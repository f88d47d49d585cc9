import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer: parameters are initialised under the init seed."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 16]
