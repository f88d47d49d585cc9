"""The aten-op FLOP counter (mblast_worker.flops) and the work a native bundle records."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT, worker_env
from mblast_worker.costmodel import count_flops_by_unit
from mblast_worker.flops import count_dispatch_flops, count_dispatch_flops_by_unit, unit_of

NATIVE = ROOT / "benchmarks" / "problems" / "native"


def test_matrix_products_count_two_flops_per_multiply_add() -> None:
    a, b, bias = torch.randn(8, 16), torch.randn(16, 4), torch.randn(4)
    assert count_dispatch_flops(lambda: a @ b) == 2 * 8 * 16 * 4
    assert count_dispatch_flops(lambda: torch.addmm(bias, a, b)) == 2 * 8 * 16 * 4
    x, y = torch.randn(3, 8, 16), torch.randn(3, 16, 4)
    assert count_dispatch_flops(lambda: torch.bmm(x, y)) == 3 * 2 * 8 * 16 * 4
    linear = torch.nn.Linear(16, 4)
    assert count_dispatch_flops(lambda: linear(a)) == 2 * 8 * 16 * 4


def test_convolutions_count_two_flops_per_multiply_add() -> None:
    conv = torch.nn.Conv1d(8, 16, 5)
    x = torch.randn(2, 8, 256)
    assert count_dispatch_flops(lambda: conv(x)) == 2 * (2 * 16 * 252) * (8 * 5)
    grouped = torch.nn.Conv2d(8, 4, 3, groups=2)
    image = torch.randn(1, 8, 10, 10)
    assert count_dispatch_flops(lambda: grouped(image)) == 2 * (4 * 8 * 8) * (4 * 9)
    transposed = torch.nn.ConvTranspose1d(8, 6, 3)
    assert count_dispatch_flops(lambda: transposed(x)) == 2 * (2 * 8 * 256) * 6 * 3


def test_flops_are_kept_per_arithmetic_unit() -> None:
    """Convolutions, matrix products and the rest apart: cuDNN runs fp32 convolutions in TF32 by
    default and cuBLAS fp32 matrix products not, so the speed of light needs them apart."""
    conv, linear = torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(4 * 6 * 6, 5)
    image = torch.randn(2, 3, 8, 8)

    def forward() -> torch.Tensor:
        return linear(torch.relu(conv(image)).flatten(1))

    expected = {"conv": 2 * (2 * 4 * 6 * 6) * (3 * 9), "matmul": 2 * 2 * (4 * 6 * 6) * 5, "other": 2 * 4 * 6 * 6}
    assert count_dispatch_flops_by_unit(forward) == expected
    assert count_dispatch_flops(forward) == sum(expected.values())
    by_unit = count_flops_by_unit(forward)  # torch.utils.flop_counter where torch has it
    assert by_unit["conv"] == expected["conv"] and by_unit["matmul"] == expected["matmul"]
    assert [unit_of(n) for n in ("convolution", "cudnn_convolution", "addmm", "bmm",
                                 "_scaled_dot_product_flash_attention", "gelu")] == \
        ["conv", "conv", "matmul", "matmul", "matmul", "other"]


def test_elementwise_reductions_softmax_and_data_movement() -> None:
    x = torch.randn(32, 64)
    assert count_dispatch_flops(lambda: x * torch.sigmoid(x)) == 2 * x.numel()
    assert count_dispatch_flops(lambda: x.sum(dim=1)) == x.numel()
    assert count_dispatch_flops(lambda: torch.softmax(x, dim=1)) == 5 * x.numel()
    assert count_dispatch_flops(lambda: x.t().contiguous().view(-1).clone()) == 0
    assert count_dispatch_flops(lambda: torch.cat([x, x]).reshape(64, 64)) == 0


@pytest.mark.parametrize("problem,flops,min_bytes", [
    ("softmax", 5 * 32 * 512, 2 * 32 * 512 * 4),
    ("swish", 2 * 16384, 2 * 16384 * 4),
    ("row_sum", 64 * 1024, (64 * 1024 + 64) * 4),
    ("matmul", 2 * 64 ** 3, 3 * 64 * 64 * 4),
    ("conv1d", 2 * (2 * 16 * 252) * (8 * 5), (2 * 8 * 256 + 16 * 8 * 5 + 16 + 2 * 16 * 252) * 4),
])
def test_native_bundles_record_the_work_of_one_forward(tmp_path: Path, problem: str, flops: int,
                                                       min_bytes: int) -> None:
    out = tmp_path / "bundles"
    subprocess.run([sys.executable, "-m", "mblast_bundle", str(NATIVE / f"{problem}.py"), str(out),
                    "--seeds", "1", "--runs", "0"], check=True, env=worker_env("cpu"), timeout=120)
    work = json.loads((out / "meta.json").read_text())["work"]
    assert work["flops"] == flops
    assert work["min_bytes"] == min_bytes
