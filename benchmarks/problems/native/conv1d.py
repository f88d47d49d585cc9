import torch
import torch.nn as nn


class Model(nn.Module):
    """A 1-D convolution with bias (stride 1, no padding). One of mblast's native-backend
    problems: its parameters reach native runners as conv.weight and conv.bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch = 2
in_channels = 8
out_channels = 16
length = 256
kernel_size = 5


def get_inputs():
    return [torch.randn(batch, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
