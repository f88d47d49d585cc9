"""A fast-route candidate (mblast_cuda.load) rewritten as a self-contained KernelBench ModelNew
file that compiles its CUDA with torch's load_inline. Entry point:
`python3 -m mblast_export CANDIDATE.py > OUT.py`."""

from .export import export_kernelbench

__all__ = ["export_kernelbench"]
