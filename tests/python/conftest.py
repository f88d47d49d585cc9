"""Shared helpers for the worker tests: paths, and running the worker's real command line."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import torch

from protocol_schema import response_errors

ROOT: Path = Path(__file__).resolve().parents[2]
WORKER_DIR: Path = ROOT / "worker"
PROBLEMS: Path = ROOT / "tests" / "problems"
CPU_CANDIDATES: Path = ROOT / "tests" / "candidates" / "cpu"
CUDA_CANDIDATES: Path = ROOT / "tests" / "candidates" / "cuda"

if str(WORKER_DIR) not in sys.path:
    sys.path.insert(0, str(WORKER_DIR))

# mblast_cuda builds through the mblast binary: the one scripts/test.sh built (BUILD_DIR).
_BUILT = Path(os.environ.get("BUILD_DIR", "build"))
os.environ.setdefault("MBLAST_BINARY", str((_BUILT if _BUILT.is_absolute() else ROOT / _BUILT) / "mblast"))

# The most float64 buffers of a chunk's size a comparison may hold at once, per (reference dtype,
# verdict only) against a float32 output (compare.DiffAccumulator): the CPU test counts them
# through the dispatcher, the CUDA one through the device's allocator.
COMPARISON_BUFFERS = [(torch.float64, False, 5), (torch.float32, False, 6), (torch.float64, True, 4),
                      (torch.float32, True, 5)]

# Small and quick: the CPU problems are tiny, so a handful of runs is enough to exercise timing.
FAST_TIMING: Dict[str, Any] = {"runs": 4, "warmup": 1, "input_sets": 2, "l2_flush": False}



def worker_env(device: Optional[str] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(WORKER_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")  # tiny problems; several workers share two cores
    if device is not None:
        env["MBLAST_DEVICE"] = device
    return env


def worker_cmd(*args: str) -> List[str]:
    return [sys.executable, "-m", "mblast_worker", *args]


def problem(name: str) -> str:
    return str(PROBLEMS / f"{name}.py")


def cpu_candidate(name: str) -> str:
    return str(CPU_CANDIDATES / f"{name}.py")


# The device the table-driven worker tests judge on: the CPU here and in CI; `cuda` in the GPU
# acceptance run (benchmarks/h200/acceptance.py), so that every hack test that is not CPU-only
# also runs against the GPU path.
TEST_DEVICE: str = os.environ.get("MBLAST_TEST_DEVICE", "cpu")


def eval_request(problem_path: str, candidate_path: str, **overrides: Any) -> Dict[str, Any]:
    req: Dict[str, Any] = {"op": "eval", "problem": problem_path, "candidate": candidate_path, "device": TEST_DEVICE,
                           "seeds": [1, 2, 3], "timing": FAST_TIMING}
    req.update(overrides)
    return req


@dataclass
class WorkerRun:
    returncode: int
    response: Optional[Dict[str, Any]]
    stdout: str
    stderr: str


def run_worker(request: Dict[str, Any], request_dir: Path, timeout: float = 120.0) -> WorkerRun:
    """`python3 -m mblast_worker run REQUEST.json`, as the tests' own subprocess."""
    request_dir.mkdir(parents=True, exist_ok=True)
    name = f"request-{abs(hash(json.dumps(request, sort_keys=True)))}.json"
    path = request_dir / name
    path.write_text(json.dumps(request))
    proc = subprocess.run(worker_cmd("run", str(path)), capture_output=True, text=True, timeout=timeout,
                          env=worker_env(request.get("device")), cwd=str(request_dir))
    response = None
    if proc.stdout.strip():
        response = json.loads(proc.stdout)
    return WorkerRun(proc.returncode, response, proc.stdout, proc.stderr)


def evaluate(request: Dict[str, Any], request_dir: Path, timeout: float = 120.0) -> Dict[str, Any]:
    run = run_worker(request, request_dir, timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.response is not None, run.stderr[-3000:]
    assert not response_errors(run.response), response_errors(run.response)
    return run.response


def evaluate_many(requests: Dict[str, Dict[str, Any]], request_dir: Path) -> Dict[str, Dict[str, Any]]:
    """Runs independent requests concurrently (each in its own worker process)."""
    workers = max(2, min(4, os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {key: pool.submit(evaluate, req, request_dir / key) for key, req in requests.items()}
        return {key: fut.result() for key, fut in futures.items()}


def brief(resp: Dict[str, Any]) -> Dict[str, Any]:
    """The parts of a response worth printing when an assertion fails."""
    keys = ("correct", "error_kind", "error", "flags", "notes", "max_abs_err", "tolerance", "compile_ms")
    return {k: resp.get(k) for k in keys}


@pytest.fixture
def request_dir(tmp_path: Path) -> Path:
    return tmp_path
