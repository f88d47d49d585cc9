"""What a candidate file written by solution.py imports inside the judge: the solution's sources
on disk (in the worker's private temporary directory), its entry point, and the calling convention
of docs/solution.md: inputs in the definition's order, then, in destination-passing style, the
outputs, allocated here at the shapes the inputs' axes give."""

import importlib.util
import itertools
import json
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from . import extension
from .axes import resolve
from .formats import Definition, FormatError, parse_definition
from .formats import shape_of
from .inputs import output_tuple, torch_dtype

_counter = itertools.count()


def _import_entry(sources: Dict[str, str], entry_file: str, function: str) -> Callable[..., Any]:
    root = tempfile.mkdtemp(prefix="mblast-solution-")
    for path, content in sources.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(content)
    sys.path.insert(0, root)  # the solution's other files import as siblings
    name = f"mblast_solution_{os.path.splitext(os.path.basename(entry_file))[0]}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, entry_file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise AttributeError(f"{entry_file} defines no function {function}()")
    return fn


def extension_cache() -> Optional[str]:
    """Where the judge builds C++ solutions ahead: beside its CUDA builds (MBLAST_CUDA_CACHE)."""
    root = os.environ.get("MBLAST_CUDA_CACHE")
    return extension.cache_under(root) if root else None


class Solution:
    def __init__(self, definition_json: str, sources_json: str, entry_point: str, dps: bool,
                 cpp_json: Optional[str] = None) -> None:
        """cpp_json: {"compile_options", "dependencies", "languages"} of a solution in a C++ language."""
        self.definition: Definition = parse_definition(json.loads(definition_json), check_reference=False)
        entry_file, function = entry_point.split("::", 1)
        sources = json.loads(sources_json)
        if cpp_json is None:
            self.fn = _import_entry(sources, entry_file, function)
        else:
            cpp = json.loads(cpp_json)
            module = extension.load(sources, cpp["compile_options"], cpp["dependencies"], cpp.get("languages", []),
                                    extension_cache())
            self.fn = getattr(module, function)
        self.dps = dps

    def __call__(self, inputs: Sequence[Any]) -> Any:
        if not self.dps:
            return output_tuple(self.fn(*inputs), self.definition)
        outputs = self.allocate(inputs)
        self.fn(*inputs, *outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def allocate(self, inputs: Sequence[Any]) -> List[torch.Tensor]:
        bound, device = self._bound_axes(inputs)
        values = resolve(self.definition.axes, bound, "solution call")
        return [torch.empty(shape_of(spec, values), dtype=torch_dtype(spec.dtype), device=device)
                for spec in self.definition.outputs.values()]

    def _bound_axes(self, inputs: Sequence[Any]) -> Tuple[Dict[str, int], torch.device]:
        """The var axes' values, read off the input tensors' shapes."""
        bound: Dict[str, int] = {}
        device = torch.device("cpu")
        for (name, spec), value in zip(self.definition.inputs.items(), inputs):
            if spec.shape is None or not isinstance(value, torch.Tensor):
                continue
            device = value.device
            for dim, size in zip(spec.shape, value.shape):
                if isinstance(dim, str) and self.definition.axes[dim].kind == "var":
                    bound[dim] = int(size)
        missing = [n for n, a in self.definition.axes.items() if a.kind == "var" and n not in bound]
        if missing:
            raise FormatError("definition.json.axes", f"var axes {missing} appear in no input's shape, so "
                                                      "outputs cannot be allocated for a destination-passing call")
        return bound, device
