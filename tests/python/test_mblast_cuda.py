"""mblast_cuda without a GPU: parsing, a real nvcc build through mblast's driver and dlopen,
argument checks and the KernelBench export. Nothing here launches a kernel."""

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER_DIR = ROOT / "worker"
CANDIDATES = ROOT / "tests" / "candidates" / "cuda"
if str(WORKER_DIR) not in sys.path:
    sys.path.insert(0, str(WORKER_DIR))

import mblast_cuda  # noqa: E402
import mblast_export  # noqa: E402

needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not os.path.isfile("/usr/local/cuda/bin/nvcc"), reason="nvcc not found"
)

RELU = r"""
extern "C" __global__ void relu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
extern "C" void relu(const float* x, float* y, long n, cudaStream_t stream) {
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
}
extern "C" int scale(float* x, float alpha, unsigned count, bool flag) { return 0; }
extern "C" void by_value(float2 v) {}
extern "C" void stream_of(unsigned long long* out, cudaStream_t s) { *out = (unsigned long long)s; }
"""

SIGNATURES = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// extern "C" void in_a_comment(float* x);
/* extern "C" void in_a_block_comment(float* x); */
#define EXPORT(name) \
    extern "C" void name(int);
extern "C" __global__ void kernel(const float* __restrict__ x) {}
extern "C" __launch_bounds__(256) __global__ void bounded(float* x) {}
extern "C" __device__ float device_only(float x) { return x; }
extern "C" void launch(const float* __restrict__ x, float* y, long n, cudaStream_t stream) {}
extern "C" int many(half* h, const __nv_bfloat16* b, unsigned long ul, int64_t i64, unsigned u,
                    std::size_t s, double d, bool flag, unsigned char* bytes, int arr[],
                    void* any, float** pp);
extern "C" int many(half* h, const __nv_bfloat16* b, unsigned long ul, int64_t i64, unsigned u,
                    std::size_t s, double d, bool flag, unsigned char* bytes, int arr[],
                    void* any, float** pp) { return 0; }
extern "C" {
struct Pair { int a, b; };
__global__ void block_kernel(float* x) {}
void in_block(float* x, int n) {}
static inline void no_params(void) {}
float* returns_pointer(int n);
void by_struct(Pair p);
void stream_first(cudaStream_t s, float* x);
}
void cpp_linkage(float* x) {}
extern "C" void unnamed(unsigned long, long long int, short);
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "cache"
    monkeypatch.setenv("MBLAST_CUDA_CACHE", str(directory))
    monkeypatch.delenv("MBLAST_NVCC", raising=False)
    yield directory
    mblast_cuda._loaded.clear()


def test_parses_host_functions_only() -> None:
    functions = {f.name: f for f in mblast_cuda.parse_host_functions(SIGNATURES)}
    assert list(functions) == [
        "launch", "many", "in_block", "no_params", "returns_pointer", "by_struct", "stream_first",
        "unnamed",
    ]  # fmt: skip
    launch = functions["launch"]
    assert launch.signature() == (
        "void launch(const float* __restrict__ x, float* y, long n, cudaStream_t stream)"
    )
    assert launch.stream_last and launch.defined and not launch.problem
    assert [(p.base, p.pointer) for p in launch.params] == [
        ("float", 1), ("float", 1), ("long", 0), ("cudaStream_t", 0),
    ]  # fmt: skip


def test_parses_parameter_types() -> None:
    many = next(f for f in mblast_cuda.parse_host_functions(SIGNATURES) if f.name == "many")
    assert many.defined and many.returns == "int" and not many.problem and not many.stream_last
    got = [(p.name, p.base, p.pointer) for p in many.params]
    assert got == [
        ("h", "half", 1),
        ("b", "__nv_bfloat16", 1),
        ("ul", "unsigned long", 0),
        ("i64", "int64_t", 0),
        ("u", "unsigned int", 0),
        ("s", "size_t", 0),
        ("d", "double", 0),
        ("flag", "bool", 0),
        ("bytes", "unsigned char", 1),
        ("arr", "int", 1),
        ("any", "void", 1),
        ("pp", "float", 2),
    ]
    assert many.params[1].text == "const __nv_bfloat16*"
    unnamed = next(f for f in mblast_cuda.parse_host_functions(SIGNATURES) if f.name == "unnamed")
    assert [(p.name, p.base) for p in unnamed.params] == [
        ("", "unsigned long"), ("", "long long"), ("", "short"),
    ]  # fmt: skip
    assert not unnamed.defined


def test_reports_what_python_cannot_call() -> None:
    functions = {f.name: f for f in mblast_cuda.parse_host_functions(SIGNATURES)}
    assert "must return void or int" in functions["returns_pointer"].problem
    assert "Pair" in functions["by_struct"].problem
    assert "last parameter" in functions["stream_first"].problem
    assert functions["no_params"].params == () and not functions["no_params"].problem


def test_the_driver_gets_the_judges_arch_and_each_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MBLAST_CUDA_ARCH", "sm_80")
    command = mblast_cuda.nvcc.build_command("/bin/mblast", ["-DBLOCK=64", "-O2"])
    assert command == ["/bin/mblast", "internal", "cuda-build", "--arch=sm_80", "--flag=-DBLOCK=64", "--flag=-O2"]
    monkeypatch.delenv("MBLAST_CUDA_ARCH")
    assert mblast_cuda.nvcc.build_command("/bin/mblast", []) == ["/bin/mblast", "internal", "cuda-build"]


def test_missing_mblast_is_a_toolkit_error(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MBLAST_BINARY", "/nonexistent/mblast")
    assert mblast_cuda.find_mblast() is None
    with pytest.raises(mblast_cuda.CudaToolkitError, match="MBLAST_BINARY"):
        mblast_cuda.load(RELU)


@needs_nvcc
def test_builds_caches_and_loads(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = mblast_cuda.load(RELU, name="relu_test")
    key = lib.key
    assert len(key) == 64 and lib.path == cache / f"{key}.so" and lib.path.is_file()
    compiled = (cache / f"{key}.cu").read_text()
    assert compiled.startswith(RELU) and "mblast_last_error" in compiled[len(RELU) :]
    assert (cache / f"{key}.log").is_file()
    assert not [p for p in cache.iterdir() if ".tmp-" in p.name]
    assert lib.functions == {
        "relu": "void relu(const float* x, float* y, long n, cudaStream_t stream)",
        "scale": "int scale(float* x, float alpha, unsigned count, bool flag)",
        "stream_of": "void stream_of(unsigned long long* out, cudaStream_t s)",
    }
    assert "float2" in lib.problems["by_value"]
    assert mblast_cuda.load(RELU) is lib
    # A fresh process finds the artifact and never runs nvcc.
    mblast_cuda._loaded.clear()
    monkeypatch.setenv("MBLAST_NVCC", "/nonexistent/nvcc")
    assert mblast_cuda.build(RELU).cached
    again = mblast_cuda.load(RELU)
    assert again is not lib and again.path == lib.path
    # Another flag is another build.
    monkeypatch.delenv("MBLAST_NVCC")
    assert mblast_cuda.load(RELU, extra_flags=["-DUNUSED=1"]).key != key


@needs_nvcc
def test_build_error_carries_nvcc_output(cache: Path) -> None:
    broken = "__global__ void k(float* x) {\n  x[0] = 1.0f\n  undefined_name();\n}\n"
    with pytest.raises(mblast_cuda.CudaBuildError) as info:
        mblast_cuda.load(broken)
    key = info.value.key
    assert f"{key}.cu(3): error" in str(info.value)
    assert "undefined_name" in str(info.value)
    assert info.value.key == key and info.value.log == (cache / f"{key}.log").read_text()
    assert not (cache / f"{key}.so").exists()


@needs_nvcc
def test_undefined_symbol_is_a_build_error(cache: Path) -> None:
    source = 'extern "C" void missing(float* x);\nextern "C" void caller(float* x) { missing(x); }\n'
    with pytest.raises(mblast_cuda.CudaBuildError, match="undefined reference to `missing'"):
        mblast_cuda.load(source)


def test_missing_nvcc_is_a_toolkit_error(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MBLAST_NVCC", "/nonexistent/nvcc")
    with pytest.raises(mblast_cuda.CudaToolkitError, match="MBLAST_NVCC"):
        mblast_cuda.load(RELU + "// not cached\n")


@needs_nvcc
def test_arguments_are_checked_before_the_call(cache: Path) -> None:
    torch = pytest.importorskip("torch")
    lib = mblast_cuda.load(RELU)
    with pytest.raises(TypeError, match=r"argument 1 'x' \(const float\*\) needs a CUDA tensor"):
        lib.relu(torch.zeros(4), torch.zeros(4), 4)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        lib.relu(None, None)
    with pytest.raises(TypeError, match="needs an integer"):
        lib.relu(None, None, 2.5)
    with pytest.raises(TypeError, match=r"use \.item\(\)"):
        lib.relu(None, None, torch.tensor(3))
    with pytest.raises(OverflowError):
        lib.scale(None, 1.0, -1, True)
    with pytest.raises(TypeError, match="needs a Python number"):
        lib.scale(None, "1.0", 1, True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        lib.relu(None, None, n=3, m=4)
    with pytest.raises(TypeError, match="cannot be called from Python"):
        lib.by_value
    with pytest.raises(AttributeError, match="callable ones: relu, scale, stream_of"):
        lib.missing
    assert lib["relu"] is lib.relu


@needs_nvcc
def test_host_code_runs_without_a_gpu(cache: Path) -> None:
    lib = mblast_cuda.load(RELU)
    lib.check_after_call = False  # no driver here: the CUDA runtime itself would report that
    seen = ctypes.c_ulonglong(7)
    lib.stream_of(ctypes.addressof(seen), 1234)
    assert seen.value == 1234
    lib.stream_of(ctypes.addressof(seen), None)
    assert seen.value == 0
    assert lib.scale(None, 2.0, 3, False) is None


def export(name: str) -> str:
    return mblast_export.export_kernelbench((CANDIDATES / name).read_text())


@pytest.mark.parametrize("name", ["relu_fast.py", "../../../benchmarks/examples/row_softmax_cuda.py",
                                  "../../../benchmarks/examples/gelu_tanh_cuda.py"])
def test_export_is_self_contained_kernelbench(name: str) -> None:
    text = export(name)
    compile(text, name, "exec")
    assert "load_inline(" in text and "class ModelNew" in text
    assert "mblast_cuda" not in text
    assert "CUDA_SRC = r" in text  # the source is kept, not inlined


def test_export_shims_every_host_function() -> None:
    text = export("relu_fast.py")
    assert "void mblast_relu(int64_t a0, int64_t a1, int64_t a2, int64_t a3);" in text
    assert "relu(MblastPtr{a0}, MblastPtr{a1}, static_cast<long>(a2), mblast_stream(a3));" in text
    assert 'functions=["mblast_relu"]' in text
    assert "    def relu(self, x, y, n, stream=None):" in text
    assert "lib = _mblast_load_0()" in text


def test_export_handles_other_import_forms() -> None:
    candidate = (
        "import torch, mblast_cuda as mc\n"
        "from mblast_cuda import load\n"
        f"SRC = r'''{RELU}'''\n"
        "FLAGS = ['--use_fast_math']\n\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lib = mc.load(SRC, extra_flags=FLAGS)\n"
        "        self.other = load(\n            SRC,\n        )\n"
    )
    text = mblast_export.export_kernelbench(candidate)
    compile(text, "candidate", "exec")
    assert "mblast_cuda" not in text and "mc." not in text
    assert "import torch\n" in text
    assert "self.lib = _mblast_load_0()" in text and "self.other = _mblast_load_1()" in text
    assert "extra_cuda_cflags=['-O3', '--use_fast_math']" in text
    assert "def scale(self, x, alpha, count, flag):" in text
    assert "int(count), bool(flag)" in text


@pytest.mark.parametrize(
    "body, message",
    [
        ("lib = mblast_cuda.load(make_source())\n", "module-level constant"),
        ("x = mblast_cuda.CudaBuildError\n", "never calls"),
        ("lib = mblast_cuda.load(SRC)\nerr = mblast_cuda.CudaBuildError\n", "beyond load"),
    ],
)
def test_export_refuses_what_it_cannot_translate(body: str, message: str) -> None:
    candidate = f"import mblast_cuda\nSRC = r'''{RELU}'''\n{body}"
    with pytest.raises(ValueError, match=message):
        mblast_export.export_kernelbench(candidate)


def test_export_command_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mblast_export", str(CANDIDATES / "relu_fast.py")],
        capture_output=True,
        text=True,
        cwd=WORKER_DIR,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == export("relu_fast.py")
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mblast_export", str(bad)],
        capture_output=True,
        text=True,
        cwd=WORKER_DIR,
    )
    assert proc.returncode == 1 and "never calls" in proc.stderr
