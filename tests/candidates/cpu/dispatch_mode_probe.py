import time

import torch
import torch.nn as nn
from torch.utils._python_dispatch import _get_current_dispatch_mode


class ModelNew(nn.Module):
    """A correct ReLU that behaves like a torch.compile'd module on PyTorch 2.11: once called under
    a TorchDispatchMode (the judge's op recording), every later call is slow. A judge that records
    ops before timing times it at the slow speed."""

    def __init__(self, *args) -> None:
        super().__init__()
        self.seen_dispatch_mode = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _get_current_dispatch_mode() is not None:
            self.seen_dispatch_mode = True
        elif self.seen_dispatch_mode:
            time.sleep(0.05)
        return torch.relu(x)
