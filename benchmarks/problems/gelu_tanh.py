import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """GELU with the tanh approximation, spelt out in elementwise PyTorch ops as a transformer's
    MLP often has it: mblast's bundled example of an unfused chain (eager runs one kernel per op)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + torch.tanh(inner))


rows = 4096
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
