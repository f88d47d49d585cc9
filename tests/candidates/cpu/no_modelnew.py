import torch


def helper(x: torch.Tensor) -> torch.Tensor:
    return x
