import torch
import torch.nn as nn

from helper_module import relu_kernel  # a sibling file: the candidate's directory is on sys.path


class ModelNew(nn.Module):
    def __init__(self, *args) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_kernel(x)
