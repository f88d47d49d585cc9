"""mblast_cuda on a CUDA machine: the example candidates against their PyTorch problems, the
argument and launch checks, and the KernelBench export (which builds with load_inline, about a
minute per candidate). Skipped where CUDA is not available."""

import ctypes
import runpy
import sys
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("CUDA is not available", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
WORKER_DIR = ROOT / "worker"
if str(WORKER_DIR) not in sys.path:
    sys.path.insert(0, str(WORKER_DIR))

import mblast_cuda  # noqa: E402
import mblast_export  # noqa: E402

# Candidate (relative to the repository root) -> problem in tests/problems.
CASES = {"tests/candidates/cuda/relu_fast.py": "cuda_relu.py",
         "benchmarks/examples/row_softmax_cuda.py": "cuda_softmax.py"}


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MBLAST_CUDA_CACHE", str(tmp_path_factory.getbasetemp() / "cuda-cache"))
    yield
    mblast_cuda._loaded.clear()


def run_file(path: Path) -> Dict[str, Any]:
    return runpy.run_path(str(path), run_name=f"mblast_test_{path.stem}")


def check_against_problem(module: Dict[str, Any], problem_name: str) -> None:
    problem = run_file(ROOT / "tests" / "problems" / problem_name)
    torch.manual_seed(0)
    inputs = [x.cuda() for x in problem["get_inputs"]()]
    model = problem["Model"](*problem["get_init_inputs"]()).cuda()
    candidate = module["ModelNew"](*problem["get_init_inputs"]()).cuda()
    expected = model(*inputs)
    got = candidate(*inputs)
    torch.cuda.synchronize()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("candidate, problem", sorted(CASES.items()))
def test_candidate_matches_reference(candidate: str, problem: str) -> None:
    check_against_problem(run_file(ROOT / candidate), problem)


def test_passes_the_current_stream() -> None:
    lib = mblast_cuda.load(
        'extern "C" void stream_of(unsigned long long* out, cudaStream_t s) {\n'
        "  *out = (unsigned long long)s;\n}\n"
    )
    seen = ctypes.c_ulonglong(0)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        lib.stream_of(ctypes.addressof(seen))
    assert seen.value == side.cuda_stream != 0
    lib.stream_of(ctypes.addressof(seen))
    assert seen.value == torch.cuda.current_stream().cuda_stream


def test_checks_tensors_on_the_gpu() -> None:
    lib = run_file(ROOT / "tests" / "candidates" / "cuda" / "relu_fast.py")["lib"]
    x = torch.randn(64, 64, device="cuda")
    with pytest.raises(TypeError, match=r"torch\.float32 tensor, got torch\.float64"):
        lib.relu(x.double(), x, x.numel())
    with pytest.raises(TypeError, match="contiguous"):
        lib.relu(x.t(), torch.empty_like(x), x.numel())


def test_launch_errors_and_error_codes_raise() -> None:
    lib = mblast_cuda.load(
        r"""
        __global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }
        extern "C" void too_many_threads(float* x, cudaStream_t s) { fill<<<1, 4096, 0, s>>>(x); }
        extern "C" int fails(int code) { return code; }
        extern "C" void fine(float* x, cudaStream_t s) { fill<<<1, 32, 0, s>>>(x); }
        """
    )
    x = torch.zeros(32, device="cuda")
    with pytest.raises(RuntimeError, match="too_many_threads"):
        lib.too_many_threads(x)
    with pytest.raises(RuntimeError, match="returned error 1"):
        lib.fails(1)
    lib.fails(0)
    lib.fine(x)
    lib.check()
    assert bool((x == 1).all())


@pytest.mark.parametrize("candidate, problem", sorted(CASES.items()))
def test_kernelbench_export_runs_and_matches(candidate: str, problem: str, tmp_path: Path) -> None:
    text = (ROOT / candidate).read_text()
    exported = tmp_path / Path(candidate).name
    exported.write_text(mblast_export.export_kernelbench(text))
    saved = sys.modules.pop("mblast_cuda")
    sys.path.remove(str(WORKER_DIR))
    try:
        module = run_file(exported)  # must not need mblast_cuda
    finally:
        sys.path.insert(0, str(WORKER_DIR))
        sys.modules["mblast_cuda"] = saved
    check_against_problem(module, problem)
