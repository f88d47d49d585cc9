"""A solution in a C++ language (cuda_cpp, cutlass, cudnn, cublas) as a torch extension: its
sources (which define the pybind11 module themselves, as docs/solution.md's torch binding has it)
built with torch.utils.cpp_extension, once per content. The judge builds it ahead on the host into
its cache (`python3 -m mblast_sol solution ... --build-cache DIR`), where the sandboxed worker finds
it read-only; a worker that finds none builds it in its own temporary folder."""

import hashlib
import importlib.util
import json
import os
import tempfile
from types import ModuleType
from typing import Any, Dict, List, Optional

import torch

COMPILED = (".cu", ".cpp", ".cc", ".cxx")
DEFAULT_CUDA_CFLAGS = ["-O3", "--use_fast_math"]  # docs/solution.md's defaults
CUTLASS_DIRS = ("/usr/local/cutlass/include", "/opt/cutlass/include", "/usr/include")


class ExtensionError(RuntimeError):
    pass


def cache_under(cuda_cache: str) -> str:
    """The folder of built extensions in the judge's CUDA build cache (MBLAST_CUDA_CACHE)."""
    return os.path.join(cuda_cache, "torch-ext")


def extension_key(sources: Dict[str, str], options: Dict[str, Any], dependencies: List[str]) -> str:
    text = json.dumps([sources, options, dependencies, torch.__version__, torch.version.cuda], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def requires_cutlass(languages: List[str], dependencies: List[str]) -> bool:
    """A solution in the cutlass language, or one that names CUTLASS among its dependencies
    (docs/solution.md: "CUTLASS_3_7")."""
    return "cutlass" in languages or any(d.upper().startswith("CUTLASS") for d in dependencies)


def _cutlass_roots() -> List[str]:
    if os.environ.get("MBLAST_CUTLASS_DIR"):
        return [os.environ["MBLAST_CUTLASS_DIR"]]
    # CUTLASS_DIR is SOL-ExecBench's own harness's variable: CUTLASS's checkout, headers under include/.
    from_harness = [os.path.join(os.environ["CUTLASS_DIR"], "include")] if os.environ.get("CUTLASS_DIR") else []
    return from_harness + list(CUTLASS_DIRS)


def cutlass_include_paths(required: bool) -> List[str]:
    """CUTLASS's header folders where they are found: every C++ solution gets them, as SOL-ExecBench's
    harness gives them to every one; a solution that requires CUTLASS fails to build without them."""
    roots = _cutlass_roots()
    for root in roots:
        if os.path.isfile(os.path.join(root, "cutlass", "cutlass.h")):
            return [root, os.path.join(os.path.dirname(root), "tools", "util", "include")]
    if not required:
        return []
    raise ExtensionError(f"the solution needs CUTLASS, whose headers are in none of {roots}; set "
                         "MBLAST_CUTLASS_DIR to the folder holding cutlass/cutlass.h (or CUTLASS_DIR to "
                         "CUTLASS's checkout, as for SOL-ExecBench's harness)")


def _ld_flags(options: Dict[str, Any]) -> List[str]:
    """docs/solution.md's default is -lcuda; without a CUDA device there is no libcuda to link."""
    if "ld_flags" in options:
        return list(options["ld_flags"])
    return ["-lcuda"] if torch.cuda.is_available() else []


def _import_built(name: str, directory: str) -> Optional[ModuleType]:
    path = os.path.join(directory, f"{name}.so")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(sources: Dict[str, str], options: Dict[str, Any], dependencies: List[str], include_paths: List[str],
          directory: str) -> ModuleType:
    """Writes the sources into directory/src and builds them there; the module on success."""
    key = extension_key(sources, options, dependencies)
    name = f"mblast_sol_{key}"
    src = os.path.join(directory, "src")
    for path, content in sources.items():
        full = os.path.join(src, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(content)
    compiled = [os.path.join(src, p) for p in sources if p.endswith(COMPILED)]
    if not compiled:
        raise ExtensionError(f"no source to compile among {sorted(sources)} (expected {', '.join(COMPILED)})")
    cuda_sources = sorted(p for p in sources if p.endswith(".cu"))
    if cuda_sources and torch.version.cuda is None:
        raise ExtensionError(f"the solution's CUDA sources ({', '.join(cuda_sources)}) need a PyTorch built with "
                             f"CUDA; torch {torch.__version__} here has none: judge it on a CUDA machine")
    from torch.utils import cpp_extension

    return cpp_extension.load(name=name, sources=compiled, extra_cflags=list(options.get("cflags", [])),
                              extra_cuda_cflags=list(options.get("cuda_cflags", DEFAULT_CUDA_CFLAGS)),
                              extra_ldflags=_ld_flags(options),
                              extra_include_paths=[src] + include_paths,
                              build_directory=directory, verbose=False)


def load(sources: Dict[str, str], options: Dict[str, Any], dependencies: List[str], languages: List[str],
         cache_root: Optional[str]) -> ModuleType:
    """The built module: from cache_root/KEY when built there ahead, else built now, into
    cache_root/KEY when it is writable (the judge's build ahead), else into a temporary folder."""
    key = extension_key(sources, options, dependencies)
    name = f"mblast_sol_{key}"
    cached = os.path.join(cache_root, key) if cache_root else None
    if cached:
        module = _import_built(name, cached)
        if module is not None:
            return module
    include_paths = cutlass_include_paths(requires_cutlass(languages, dependencies))
    if cached:
        try:
            os.makedirs(cached, exist_ok=True)
            return build(sources, options, dependencies, include_paths, cached)
        except OSError:
            pass  # a read-only cache (inside the sandbox): build privately
    return build(sources, options, dependencies, include_paths, tempfile.mkdtemp(prefix="mblast-ext-"))
