"""Plain CUDA for candidates: nvcc to a shared object in about a second, called through ctypes.

A candidate keeps its CUDA source in a string and calls ``lib = mblast_cuda.load(CUDA_SRC)``.
Every ``extern "C"`` host function of the source becomes ``lib.<name>``: tensors pass as device
pointers (checked for device, layout and dtype), numbers are range-checked, and a trailing
``cudaStream_t`` parameter is filled with PyTorch's current stream.

Sources are built by mblast's one nvcc driver (backends/cuda/cuda_build.cpp), which the judge
uses to pre-build candidates in parallel and this package calls as `mblast internal cuda-build`
($MBLAST_BINARY, else mblast on PATH); artifacts live in its cache, keyed by the SHA-256 of the
compiled text, the nvcc flags and the architecture.

The package's three parts: nvcc.py (the call to mblast's nvcc driver), declarations.py (the
extern "C" parser and the C scalar table), marshal.py (ctypes calls and load()). It has no command
line: candidates import it. Their export for KernelBench is mblast_export's job.
"""

from .declarations import HostFunction, Param, parse_host_functions
from .marshal import Library, _loaded, load  # noqa: F401 - _loaded: the loaded libraries, tests clear it
from .nvcc import Build, CudaBuildError, CudaToolkitError, build, find_mblast

__all__ = [
    "Build",
    "CudaBuildError",
    "CudaToolkitError",
    "HostFunction",
    "Library",
    "Param",
    "build",
    "find_mblast",
    "load",
    "parse_host_functions",
]
