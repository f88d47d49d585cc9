import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """For linear_small: nudges its own bias after every call."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        with torch.no_grad():
            self.fc.bias.add_(1e-7)
        return y
