"""Plain CUDA for candidates: nvcc to a shared object in about a second, called through ctypes.

A candidate keeps its CUDA source in a string and calls ``lib = mblast_cuda.load(CUDA_SRC)``.
Every ``extern "C"`` host function of the source becomes ``lib.<name>``: tensors pass as device
pointers (checked for device, layout and dtype), numbers are range-checked, and a trailing
``cudaStream_t`` parameter is filled with PyTorch's current stream.

Artifacts live in a cache keyed by the SHA-256 of the compiled text, the nvcc flags and the
architecture. The C++ driver (backends/cuda/cuda_build.cpp) computes the same key and pre-builds
candidates in parallel; both sides must change together.

``export_kernelbench`` rewrites a candidate into KernelBench's load_inline form. Command line:
``python3 -m mblast_cuda export CANDIDATE.py > OUT.py`` or ``python3 -m mblast_cuda key < SRC``.

The package's four parts: nvcc.py (the shared recipe, key, cache and compile), declarations.py
(the extern "C" parser and the C scalar table), marshal.py (ctypes calls and load()), export.py
(the KernelBench export); __main__.py is the command line.
"""

from .declarations import HostFunction, Param, parse_host_functions
from .export import export_kernelbench
from .marshal import Library, _loaded, load  # noqa: F401 - _loaded: the loaded libraries, tests clear it
from .nvcc import CudaBuildError, CudaToolkitError, cache_dir, cache_key, detect_arch, final_source, find_nvcc, nvcc_flags

__all__ = [
    "CudaBuildError",
    "CudaToolkitError",
    "HostFunction",
    "Library",
    "Param",
    "cache_dir",
    "cache_key",
    "detect_arch",
    "export_kernelbench",
    "final_source",
    "find_nvcc",
    "load",
    "nvcc_flags",
    "parse_host_functions",
]
