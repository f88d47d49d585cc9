"""A solution.json (docs/solution.md) as an mblast candidate file: ModelNew.forward takes the
definition's inputs and calls the solution's entry point (solution_runtime.py).

Python languages (pytorch, triton, cute_dsl, cutile, cudnn_frontend) run as they are; whether their
libraries are installed is the judge's to find (a missing one fails the candidate's load with
the import error). C++ languages (cuda_cpp, cutlass, cudnn, cublas) are built as a torch extension
(extension.py) with the solution's compile options; only the torch binding is supported.
"""

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List

from .formats import Definition, FormatError, _object, _string

PYTHON_LANGUAGES = ("pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend")
CPP_LANGUAGES = ("cuda_cpp", "cutlass", "cudnn", "cublas")


class UnsupportedSolution(ValueError):
    """A well-formed solution that mblast cannot run yet."""


@dataclass
class Solution:
    name: str
    definition: str
    languages: List[str]
    entry_point: str
    dps: bool
    sources: Dict[str, str]
    compile_options: Dict[str, List[str]] = field(default_factory=dict)
    dependencies: List[str] = field(default_factory=list)

    @property
    def is_cpp(self) -> bool:
        return any(x in CPP_LANGUAGES for x in self.languages)


def parse_solution(raw: Any, where: str) -> Solution:
    obj = _object(raw, where)
    spec = _object(obj.get("spec"), f"{where}.spec")
    languages = spec.get("languages")
    if not isinstance(languages, list) or not languages or not all(isinstance(x, str) for x in languages):
        raise FormatError(f"{where}.spec.languages", f"must be a non-empty list of strings, got {languages!r}")
    unknown = [x for x in languages if x not in PYTHON_LANGUAGES + CPP_LANGUAGES]
    if unknown:
        raise FormatError(f"{where}.spec.languages", f"unknown language(s) {unknown}; expected "
                                                     f"{', '.join(PYTHON_LANGUAGES + CPP_LANGUAGES)}")
    entry = str(_string(spec, "entry_point", f"{where}.spec"))
    if "::" not in entry:
        raise FormatError(f"{where}.spec.entry_point", f"must be 'file::function', got {entry!r}")
    dps = spec.get("destination_passing_style", True)
    if not isinstance(dps, bool):
        raise FormatError(f"{where}.spec.destination_passing_style", f"must be true or false, got {dps!r}")
    sources: Dict[str, str] = {}
    raw_sources = obj.get("sources")
    if not isinstance(raw_sources, list) or not raw_sources:
        raise FormatError(f"{where}.sources", "must be a non-empty list of {path, content}")
    for i, item in enumerate(raw_sources):
        item = _object(item, f"{where}.sources[{i}]")
        path = str(_string(item, "path", f"{where}.sources[{i}]"))
        if os.path.isabs(path) or ".." in path.split("/") or path in sources:
            raise FormatError(f"{where}.sources[{i}].path", f"must be a relative path without '..', used once: "
                                                            f"{path!r}")
        content = item.get("content")
        if not isinstance(content, str):
            raise FormatError(f"{where}.sources[{i}].content", "must be a string")
        sources[path] = content
    if entry.split("::", 1)[0] not in sources:
        raise FormatError(f"{where}.spec.entry_point", f"names file {entry.split('::', 1)[0]!r}, which sources do "
                                                       f"not hold ({sorted(sources)})")
    solution = Solution(str(_string(obj, "name", where)), str(_string(obj, "definition", where)), list(languages),
                        entry, dps, sources, _compile_options(spec, where), _strings(spec, "dependencies", where))
    if solution.is_cpp and any(x in PYTHON_LANGUAGES for x in languages):
        raise FormatError(f"{where}.spec.languages", "mixes C++ and Python languages, which the format forbids")
    binding = spec.get("binding") or "torch"
    if solution.is_cpp and binding != "torch":
        raise UnsupportedSolution(f"solution {solution.name!r} uses the {binding!r} binding; mblast builds C++ "
                                  "solutions with the torch binding only")
    return solution


def _strings(obj: Any, key: str, where: str) -> List[str]:
    value = obj.get(key) or []
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise FormatError(f"{where}.spec.{key}", f"must be a list of strings, got {value!r}")
    return list(value)


def _compile_options(spec: Any, where: str) -> Dict[str, List[str]]:
    raw = _object(spec.get("compile_options") or {}, f"{where}.spec.compile_options")
    unknown = sorted(set(raw) - {"cflags", "cuda_cflags", "ld_flags"})
    if unknown:
        raise FormatError(f"{where}.spec.compile_options", f"unknown field(s) {unknown}; expected cflags, "
                                                           "cuda_cflags, ld_flags")
    return {k: _strings(raw, k, f"{where}.spec.compile_options") for k in raw}


def candidate_source(solution: Solution, definition: Definition, raw_definition: Dict[str, Any]) -> str:
    if solution.definition != definition.name:
        raise FormatError("solution.definition", f"is {solution.definition!r}, but the problem is "
                                                 f"{definition.name!r}")
    args = ", ".join(definition.inputs)
    cpp = json.dumps({"compile_options": solution.compile_options, "dependencies": solution.dependencies,
                      "languages": solution.languages})
    spec = {k: v for k, v in raw_definition.items() if k not in ("reference", "description")}
    return f'''# mblast: SOL-ExecBench solution {solution.name!r} ({", ".join(solution.languages)}) for
# {definition.name!r}; entry point {solution.entry_point}, destination-passing style {solution.dps}.
import torch
from mblast_sol.solution_runtime import Solution as _MblastSolution

_SOLUTION = _MblastSolution({json.dumps(spec)!r},
                            {json.dumps(solution.sources)!r},
                            {solution.entry_point!r}, {solution.dps!r},
                            {cpp if solution.is_cpp else None!r})


class ModelNew(torch.nn.Module):
    def forward(self, {args}):
        return _SOLUTION(({args},))
'''
