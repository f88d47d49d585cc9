"""A solution.json (docs/solution.md) as an mblast candidate file: ModelNew.forward takes the
definition's inputs and calls the solution's entry point (solution_runtime.py).

Python languages (pytorch, triton, cute_dsl, cutile, cudnn_frontend) run as they are; whether their
libraries are installed is the judge's to find (a missing one fails the candidate's load with
the import error). C++ languages (cuda_cpp, cutlass, cudnn, cublas: a torch extension) are not
supported yet and are refused with that reason.
"""

import json
import os
from dataclasses import dataclass
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
    return Solution(str(_string(obj, "name", where)), str(_string(obj, "definition", where)), list(languages),
                    entry, dps, sources)


def candidate_source(solution: Solution, definition: Definition, raw_definition: Dict[str, Any]) -> str:
    if solution.definition != definition.name:
        raise FormatError("solution.definition", f"is {solution.definition!r}, but the problem is "
                                                 f"{definition.name!r}")
    cpp = [x for x in solution.languages if x in CPP_LANGUAGES]
    if cpp:
        raise UnsupportedSolution(f"solution {solution.name!r} is written in {', '.join(cpp)} (a torch C++ "
                                  "extension), which mblast does not build yet; Python languages are supported: "
                                  f"{', '.join(PYTHON_LANGUAGES)}")
    args = ", ".join(definition.inputs)
    spec = {k: v for k, v in raw_definition.items() if k not in ("reference", "description")}
    return f'''# mblast: SOL-ExecBench solution {solution.name!r} ({", ".join(solution.languages)}) for
# {definition.name!r}; entry point {solution.entry_point}, destination-passing style {solution.dps}.
import torch
from mblast_sol.solution_runtime import Solution as _MblastSolution

_SOLUTION = _MblastSolution({json.dumps(spec)!r},
                            {json.dumps(solution.sources)!r},
                            {solution.entry_point!r}, {solution.dps!r})


class ModelNew(torch.nn.Module):
    def forward(self, {args}):
        return _SOLUTION(({args},))
'''
