import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A correct ReLU that raises unless autograd is recording: shows in which grad mode the
    worker called it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            raise RuntimeError("called without autograd recording")
        return torch.relu(x)
