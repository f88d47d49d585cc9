import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row softmax written out in PyTorch ops (max shift, exp, normalise): a plain candidate that
    `mblast eval --device cpu` can judge on any machine."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=1, keepdim=True)
        e = torch.exp(shifted)
        return e / e.sum(dim=1, keepdim=True)
