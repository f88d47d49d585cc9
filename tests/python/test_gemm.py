"""Which forwards are one GEMM of their bundle's tensors (mblast_worker.gemm), and the record the
bundle writer leaves for the OpenCL backend's CLBlast baseline."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, List, Tuple

import torch

from conftest import PROBLEMS, ROOT, worker_env
from mblast_worker.gemm import gemm_shape


class _Forward(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: Any) -> Any:
        return self.fn(*xs)


def _shape(fn: Callable[..., Any], *inputs: torch.Tensor) -> Tuple[Any, str]:
    return gemm_shape(_Forward(fn), list(inputs), [])


def _replay(record: Any, tensors: dict) -> torch.Tensor:
    """C computed from the record alone, reading the named tensors' memory as a BLAS would."""
    def operand(o: Any, rows: int, cols: int) -> torch.Tensor:
        flat = tensors[o["tensor"]].reshape(-1)
        stored = (cols, rows) if o["transposed"] else (rows, cols)
        mats = [torch.as_strided(flat, stored, (o["ld"], 1), o["offset"] + i * o["batch_stride"])
                for i in range(record["batch"])]
        return torch.stack([m.t() if o["transposed"] else m for m in mats])
    m, n, k = record["m"], record["n"], record["k"]
    return operand(record["a"], m, k) @ operand(record["b"], k, n)


def test_plain_transposed_and_batched_products_name_their_operands() -> None:
    a, b = torch.randn(8, 6), torch.randn(6, 5)
    record, reason = _shape(lambda x, y: x @ y, a, b)
    assert reason == ""
    assert (record["op"], record["batch"], record["m"], record["n"], record["k"]) == ("mm", 1, 8, 5, 6)
    assert record["a"] == {"tensor": "input0", "transposed": False, "offset": 0, "ld": 6, "batch_stride": 0}
    assert record["b"]["tensor"] == "input1" and not record["b"]["transposed"]
    assert record["c"] == {"tensor": "output0", "transposed": False, "offset": 0, "ld": 5, "batch_stride": 40}

    x, y = torch.randn(3, 7, 4), torch.randn(3, 9, 4)
    record, _ = _shape(lambda p, q: torch.bmm(p, q.transpose(1, 2)), x, y)
    assert (record["op"], record["batch"], record["m"], record["n"], record["k"]) == ("bmm", 3, 7, 9, 4)
    assert record["b"] == {"tensor": "input1", "transposed": True, "offset": 0, "ld": 4, "batch_stride": 36}
    torch.testing.assert_close(_replay(record, {"input0": x, "input1": y}), torch.bmm(x, y.transpose(1, 2)))

    # Both operands transposed, and a 3-D operand folded into one mm by matmul.
    p, q = torch.randn(6, 8), torch.randn(5, 6)
    record, _ = _shape(lambda s, t: s.t() @ t.t(), p, q)
    assert record["a"]["transposed"] and record["b"]["transposed"]
    torch.testing.assert_close(_replay(record, {"input0": p, "input1": q})[0], p.t() @ q.t())
    z = torch.randn(2, 4, 6)
    record, _ = _shape(lambda s, t: s @ t, z, b)
    assert (record["op"], record["m"]) == ("mm", 8)


def test_slices_keep_their_leading_dimension_and_offset() -> None:
    a, b = torch.randn(8, 10), torch.randn(7, 5)
    record, reason = _shape(lambda x, y: x[:, 3:9] @ y[1:, :], a, b)
    assert reason == ""
    assert (record["a"]["ld"], record["a"]["offset"], record["b"]["offset"]) == (10, 3, 5)
    torch.testing.assert_close(_replay(record, {"input0": a, "input1": b})[0], a[:, 3:9] @ b[1:, :])


def test_a_linear_layer_without_bias_reads_its_weight_transposed() -> None:
    linear = torch.nn.Linear(6, 4, bias=False)
    x = torch.randn(5, 6)
    record, reason = gemm_shape(linear, [x], list(linear.state_dict().items()))
    assert reason == ""
    assert record["b"] == {"tensor": "weight", "transposed": True, "offset": 0, "ld": 6, "batch_stride": 0}


def test_anything_more_than_one_product_is_not_a_gemm() -> None:
    a, b = torch.randn(8, 6), torch.randn(6, 5)
    cases: List[Tuple[Callable[..., Any], str]] = [
        (lambda x, y: torch.softmax(x, dim=1), "_softmax"),
        (lambda x, y: (x @ y) * 2, "mm, mul"),
        (lambda x, y: x @ y + 1, "add"),
        (lambda x, y: x.t().contiguous().t() @ y, "clone"),  # a copy is work the library skips
        (lambda x, y: (x @ y).t(), "contiguous"),  # the output is not the product's layout
    ]
    for fn, said in cases:
        record, reason = _shape(fn, a, b)
        assert record is None, said
        assert reason, said
    assert "_softmax" in _shape(cases[0][0], a, b)[1]
    assert "mul" in _shape(cases[1][0], a, b)[1]
    linear = torch.nn.Linear(6, 4)
    record, reason = gemm_shape(linear, [torch.randn(5, 6)], list(linear.state_dict().items()))
    assert record is None and "addmm" in reason
    record, reason = _shape(lambda x, y: x.double() @ y.double(), a, b)
    assert record is None


def _meta(tmp_path: Path, problem: Path) -> dict:
    out = tmp_path / problem.stem
    subprocess.run([sys.executable, "-m", "mblast_bundle", str(problem), str(out), "--seeds", "1",
                    "--runs", "0"], check=True, env=worker_env("cpu"), timeout=120)
    return json.loads((out / "meta.json").read_text())


def test_bundles_record_the_gemm_or_why_not(tmp_path: Path) -> None:
    meta = _meta(tmp_path, ROOT / "benchmarks" / "problems" / "native" / "matmul.py")
    assert (meta["gemm"]["m"], meta["gemm"]["n"], meta["gemm"]["k"]) == (64, 64, 64)
    assert "gemm_reason" not in meta
    meta = _meta(tmp_path, PROBLEMS / "bmm_transposed.py")
    assert (meta["gemm"]["op"], meta["gemm"]["batch"], meta["gemm"]["b"]["transposed"]) == ("bmm", 3, True)
    meta = _meta(tmp_path, PROBLEMS / "softmax_small.py")
    assert meta["gemm"] is None
    assert "_softmax" in meta["gemm_reason"]
