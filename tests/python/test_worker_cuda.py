"""CUDA-only checks of the worker (skipped where no GPU is visible)."""

import json
import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest
import torch

from conftest import COMPARISON_BUFFERS, CUDA_CANDIDATES, PROBLEMS, brief, eval_request, evaluate, problem, worker_cmd, worker_env

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

TIMING: Dict[str, Any] = {"runs": 10, "warmup": 2, "input_sets": 2, "l2_flush": True}


def cuda_problem(name: str) -> str:
    return str(PROBLEMS / "cuda" / f"{name}.py")


def cuda_candidate(name: str) -> str:
    return str(CUDA_CANDIDATES / f"{name}.py")


def cuda_eval(tmp_path: Path, prob: str, cand: str, **overrides: Any) -> Dict[str, Any]:
    req = eval_request(prob, cand, device="cuda", timing=TIMING)
    req.update(overrides)
    return evaluate(req, tmp_path, timeout=600)


@pytest.mark.parametrize(
    "prob, cand, flag",
    [
        ("matmul_2048", "side_stream", "side_stream"),
        ("relu_large", "cuda_partial", "partial_output"),
        ("relu_large", "cuda_freed_reference_memory", "uninitialized_output"),
        ("matmul_2048", "cuda_tf32", "precision_drop"),
    ],
)
def test_cuda_cheat_is_flagged(tmp_path: Path, prob: str, cand: str, flag: str) -> None:
    resp = cuda_eval(tmp_path, cuda_problem(prob), cuda_candidate(cand))
    assert flag in resp["flags"], brief(resp)
    assert resp["correct"] is False and resp["error"], brief(resp)


def test_small_cuda_cheats(tmp_path: Path) -> None:
    """The small-pool path of the caching allocator (blocks under 1 MiB)."""
    for cand, flag in (("cuda_partial", "partial_output"), ("cuda_freed_reference_memory", "uninitialized_output")):
        resp = cuda_eval(tmp_path, problem("relu_small"), cuda_candidate(cand))
        assert flag in resp["flags"] and resp["correct"] is False, brief(resp)


@pytest.mark.parametrize("prob", ["matmul_2048", "relu_large", "conv_tf32"])
def test_cuda_problem_verifies_against_itself(tmp_path: Path, prob: str) -> None:
    resp = cuda_eval(tmp_path, cuda_problem(prob), cuda_problem(prob))
    assert resp["correct"] is True, brief(resp)
    assert resp["flags"] == ["reference_as_candidate"], brief(resp)
    assert resp["reference_precision"] == "float64"
    assert resp["ref_ms"] > 0 and resp["cand_ms"] > 0
    if prob == "conv_tf32":
        # eager convolution runs in TF32 (PyTorch's default), the candidate may not: widened tolerance
        assert resp["tolerance"]["widened_by_eager"] is True and resp["eager_max_rel_err"] > 1e-4


def test_correct_cuda_candidate_with_compile_baseline(tmp_path: Path) -> None:
    resp = cuda_eval(tmp_path, cuda_problem("relu_large"), cuda_candidate("correct_relu_cuda"),
                     baselines=["eager", "compile"], device_ceilings={"bandwidth_gbs": 4000, "peak_tflops": 60})
    assert resp["correct"] is True and resp["flags"] == [], brief(resp)
    assert resp["compile_ms"] is not None and resp["speedup_vs_compile"] is not None, resp["notes"]
    assert resp["flops"] is not None and resp["sol_ms"] is not None and resp["sol_ms"] > 0
    assert resp["cand_ms"] >= 0.9 * resp["sol_ms"]


def test_compiled_candidate_raises_no_flag(tmp_path: Path) -> None:
    resp = cuda_eval(tmp_path, cuda_problem("relu_large"), cuda_candidate("compiled_relu"))
    assert resp["correct"] is True and resp["flags"] == [], brief(resp)


def test_cuda_ceilings(tmp_path: Path) -> None:
    resp = evaluate({"op": "ceilings", "device": "cuda"}, tmp_path, timeout=600)
    assert resp["bandwidth_gbs"] > 100 and resp["peak_tflops_fp32"] > 1, brief(resp)


def test_serve_on_cuda(tmp_path: Path) -> None:
    proc = subprocess.Popen(worker_cmd("serve"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=worker_env("cuda"), cwd=str(tmp_path))
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    assert ready["ready"] is True and ready["device"].startswith("cuda")
    req = eval_request(problem("relu_small"), cuda_candidate("correct_relu_cuda"), device="cuda", seeds=[1])
    out, _err = proc.communicate(json.dumps(req) + "\n", timeout=600)
    resp = json.loads(out.strip().splitlines()[-1])  # after the progress lines
    assert resp["correct"] is True and resp["device_name"] == ready["device_name"]


@pytest.mark.parametrize("ref_dtype,verdict_only,buffers", COMPARISON_BUFFERS)
def test_a_comparison_allocates_few_chunk_sized_buffers_on_the_gpu(ref_dtype: torch.dtype, verdict_only: bool,
                                                                  buffers: int) -> None:
    # What the judge's memory budget leaves beside the largest outputs (compare.DiffAccumulator),
    # as the device's allocator counts it: the CPU test counts the same through the dispatcher.
    from mblast_worker.compare import Tol, diff
    from mblast_worker.tensors import chunk_elements

    n = 4 * chunk_elements(1)
    r = torch.randn(n, device="cuda", dtype=torch.float64)
    c, ref = (r + 1e-5).float(), r.to(ref_dtype)
    diff(c, ref, Tol(1e-4, 1e-4), 1e-4, verdict_only=verdict_only)  # warm-up: the allocator's blocks
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated()
    diff(c, ref, Tol(1e-4, 1e-4), 1e-4, poison=0x7FC00000, verdict_only=verdict_only)
    torch.cuda.synchronize()
    chunk_bytes = 8 * chunk_elements(n)
    assert torch.cuda.max_memory_allocated() - held <= (buffers + 0.3) * chunk_bytes
