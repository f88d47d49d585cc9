"""One KernelBench-style problem file per workload (Model, get_inputs, get_init_inputs), which
mblast's judge takes as it takes any problem, and the manifest that lists them.

A file holds the definition's reference unchanged, then how the judge calls it: Model.forward is
the reference's run() with the definition's input names, get_inputs() makes the workload's inputs
(mblast_sol.runtime) and MBLAST_TOLERANCE is the workload's own tolerance, which the judge reads.
"""

import ast
import json
import os
from typing import Any, Dict, List

from .axes import check_constraints, resolve
from .formats import Definition, FormatError, ProblemDir, Workload, shape_of

# Names the judge reads from a problem file: a reference that defines them would be shadowed.
RESERVED = ("Model", "get_inputs", "get_init_inputs", "MBLAST_TOLERANCE")


def _top_level_names(source: str) -> List[str]:
    names: List[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _describe_inputs(definition: Definition, workload: Workload, values: Dict[str, int]) -> str:
    parts = []
    for name, spec in definition.inputs.items():
        source = workload.inputs[name]
        if spec.shape is None:
            parts.append(f"{name}={source.value!r}" if source.kind == "scalar" else f"{name} ({spec.dtype} scalar)")
        else:
            parts.append(f"{name} {spec.dtype}{shape_of(spec, values)}")
    return ", ".join(parts)


def problem_source(problem: ProblemDir, index: int) -> str:
    definition, workload = problem.definition, problem.workloads[index]
    values = resolve(definition.axes, workload.axes, f"workload.jsonl workload {workload.uuid}")
    check_constraints(definition.constraints, values, f"workload.jsonl workload {workload.uuid}")
    clash = sorted(set(_top_level_names(definition.reference)) & set(RESERVED))
    if clash:
        raise FormatError("definition.json.reference", f"defines {clash}, names mblast's problem file needs")
    args = ", ".join(definition.inputs)
    outputs = ", ".join(f"{n} {s.dtype}{shape_of(s, values)}" for n, s in definition.outputs.items())
    raw_definition = {k: v for k, v in problem.raw_definition.items() if k not in ("reference", "description")}
    axes = ", ".join(f"{k}={v}" for k, v in values.items())
    return f'''# mblast: SOL-ExecBench problem {definition.name!r}, workload {workload.uuid}
# ({index + 1} of {len(problem.workloads)}), written from {problem.directory}.
# Axes: {axes}.
# Inputs: {_describe_inputs(definition, workload, values)}.
# Outputs: {outputs}.
# The reference below is the definition's, unchanged; after it, how mblast's judge calls it.

{definition.reference.rstrip()}


# ---- mblast: the judge's view of this workload ----
import torch as _mblast_torch
from mblast_sol.runtime import problem_side as _mblast_problem_side

_MBLAST = _mblast_problem_side({json.dumps(raw_definition)!r}, {json.dumps(problem.raw_workloads[index])!r},
                               {problem.directory!r}, globals().get({definition.custom_inputs_entrypoint!r}))
MBLAST_TOLERANCE = _MBLAST.tolerance()


class Model(_mblast_torch.nn.Module):
    def forward(self, {args}):
        return _MBLAST.outputs(run({args}))


def get_inputs():
    return _MBLAST.inputs()


def get_init_inputs():
    return []
'''


def write_problem_files(problem: ProblemDir, out_dir: str) -> Dict[str, Any]:
    """Writes workload-NNN.py per workload and manifest.json into out_dir; returns the manifest."""
    os.makedirs(out_dir, exist_ok=True)
    entries = []
    for i, workload in enumerate(problem.workloads):
        path = os.path.join(out_dir, f"workload-{i:03d}.py")
        source = problem_source(problem, i)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        values = resolve(problem.definition.axes, workload.axes, f"workload {workload.uuid}")
        entries.append({"uuid": workload.uuid, "file": path, "axes": values,
                        "tolerance": workload.tolerance.to_json()})
    d = problem.definition
    manifest = {
        "format": "sol-execbench", "name": d.name, "op_type": d.op_type, "directory": problem.directory,
        "inputs": {n: {"shape": s.shape, "dtype": s.dtype} for n, s in d.inputs.items()},
        "outputs": {n: {"shape": s.shape, "dtype": s.dtype} for n, s in d.outputs.items()},
        "workloads": entries,
    }
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    return manifest
