import os

import torch
import torch.nn as nn

print("candidate says hello on stdout at import")
os.write(1, b"candidate writes raw bytes to fd 1\n")


class ModelNew(nn.Module):
    def __init__(self, *args) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print("{\"ready\": false, \"forged\": true}")
        return torch.relu(x)
