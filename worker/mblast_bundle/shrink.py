"""Reduced sizes for a KernelBench problem: the same computation on smaller tensors.

A problem's sizes are integer constants that get_inputs() and get_init_inputs() read: module-level
names (`batch_size = 4096`, `N = 2048 * 2`, `input_shape = (32768,)`) and integer literals in the
two functions' bodies (`torch.rand(batch_size, 3, 224, 224)`). Constants of at most KEEP_AT_MOST
are kept as they are (axes, kernel sizes, strides, paddings, dilations, groups); a name whose value
is computed from other names (`input_shape = (num_classes,)`, `groups = in_channels`) follows them.
Every larger one is divided by the same power of two, 2**k (rounding down, never below 1), which
keeps their ratios and their factors of two. k is the smallest for which one forward of the
shrunken problem runs and its inputs, parameters and outputs hold at most the budget of elements
together; trials go from the smallest sizes up, so no trial is far above the budget.

    python3 -m mblast_bundle shrink PROBLEM.py --elements N [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import torch

from mblast_worker.errors import TaskError, WorkerError
from mblast_worker.loader import call_input_fn, construct, describe, load_problem
from mblast_worker.outputs import output_list

KEEP_AT_MOST = 16
INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs")
Value = Union[int, Tuple[int, ...]]


@dataclass
class Site:
    """One size constant in the source: where its value is written and what it is."""

    name: str  # the module-level name, or "get_inputs" / "get_init_inputs" for a literal there
    line: int
    start: Tuple[int, int]  # (line, column) of the value's text
    end: Tuple[int, int]
    value: Value


@dataclass
class Trial:
    k: int
    elements: Optional[int] = None  # inputs + parameters (+ outputs once the forward ran)
    error: Optional[str] = None  # why this size does not run
    over_budget: bool = False


@dataclass
class Shrink:
    source: str
    budget: int
    factor: int
    elements: int
    sizes: List[Dict[str, Any]] = field(default_factory=list)

    def report(self) -> Dict[str, Any]:
        return {"budget": self.budget, "factor": self.factor, "elements": self.elements, "sizes": self.sizes}


def _fold(node: ast.AST) -> Optional[Value]:
    """The value of an expression made only of integer literals (and + - * // ** << and
    tuples of them), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _fold(node.operand)
        return -inner if isinstance(inner, int) and isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        left, right = _fold(node.left), _fold(node.right)
        if not isinstance(left, int) or not isinstance(right, int):
            return None
        ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.FloorDiv: lambda a, b: a // b if b else None, ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None,
               ast.Pow: lambda a, b: a**b if 0 <= b < 64 else None}
        op = ops.get(type(node.op))
        return op(left, right) if op else None
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_fold(e) for e in node.elts]
        if items and all(isinstance(i, int) for i in items):
            return tuple(i for i in items if isinstance(i, int))
    return None


def _names_in(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _large(value: Value) -> bool:
    values = value if isinstance(value, tuple) else (value,)
    return any(v > KEEP_AT_MOST for v in values)


def find_sites(source: str) -> List[Site]:
    """The size constants of a problem source (see the module's docstring), in source order."""
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in INPUT_FUNCTIONS]
    assigned: Dict[str, List[ast.expr]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigned.setdefault(node.target.id, []).append(node.value)
    read: Set[str] = set()
    pending = [name for fn in functions for name in _names_in(fn)]
    while pending:  # the names the functions read, and the names those are computed from
        name = pending.pop()
        if name in read or name not in assigned:
            continue
        read.add(name)
        for value in assigned[name]:
            pending.extend(_names_in(value))
    sites: List[Site] = []
    for name in sorted(read):
        for value_node in assigned[name]:
            value = _fold(value_node)
            if value is not None and _large(value):
                sites.append(_site(name, value_node, value))
    for fn in functions:
        for node in ast.walk(fn):
            if isinstance(node, ast.Constant) and type(node.value) is int and node.value > KEEP_AT_MOST:
                sites.append(_site(fn.name, node, node.value))
    sites.sort(key=lambda s: s.start)
    return sites


def _site(name: str, node: ast.expr, value: Value) -> Site:
    assert node.end_lineno is not None and node.end_col_offset is not None
    return Site(name, node.lineno, (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset), value)


def scaled(value: Value, k: int) -> Value:
    if isinstance(value, tuple):
        return tuple(v if v <= KEEP_AT_MOST else max(1, v >> k) for v in value)
    return value if value <= KEEP_AT_MOST else max(1, value >> k)


def _literal(value: Value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def rewrite(source: str, sites: List[Site], k: int, header: str = "") -> str:
    """The source with every site's value divided by 2**k, written as a literal."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")

    def at(pos: Tuple[int, int]) -> int:  # ast columns count UTF-8 bytes
        return offsets[pos[0] - 1] + pos[1]

    for site in sorted(sites, key=lambda s: s.start, reverse=True):
        data = data[: at(site.start)] + _literal(scaled(site.value, k)).encode("utf-8") + data[at(site.end):]
    return header + data.decode("utf-8")


def _count(values: List[Any]) -> int:
    return sum(v.numel() for v in values if isinstance(v, torch.Tensor))


def run_trial(source: str, k: int, budget: int, seed: int = 1) -> Trial:
    """Builds the problem at 2**-k of its sizes and counts one forward's elements. The forward
    runs only when the inputs and parameters fit the budget."""
    trial = Trial(k)
    with tempfile.TemporaryDirectory(prefix="mblast-shrink-") as tmp:
        path = os.path.join(tmp, "problem.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        try:
            problem = load_problem(path)
            init_inputs = call_input_fn(problem, "get_init_inputs")
            model = construct(problem.model_cls, init_inputs, seed, torch.device("cpu"), path, TaskError)
            torch.manual_seed(seed)
            inputs = call_input_fn(problem, "get_inputs")
            trial.elements = _count(inputs) + _count(list(model.state_dict().values()))
            if trial.elements > budget:
                trial.over_budget = True
                return trial
            with torch.no_grad():
                outputs = output_list(model(*inputs))
        except WorkerError as exc:
            trial.error = exc.message.replace(path, "the shrunken problem")
            return trial
        except Exception as exc:  # noqa: BLE001 - the shrunken forward failed: its shapes do not fit
            trial.error = f"forward raised {describe(exc)}"
            return trial
    trial.elements += _count(outputs or [])
    trial.over_budget = trial.elements > budget
    return trial


def _header(budget: int, k: int, sizes: List[Dict[str, Any]]) -> str:
    changes = ", ".join(f"{s['name']} {_literal(s['from'])} -> {_literal(s['to'])}" for s in sizes)
    return (f"# Shrunk by mblast to at most {budget} elements: sizes divided by {2**k} "
            f"(mblast_bundle.shrink): {changes}\n")


def shrink_source(source: str, budget: int, seed: int = 1) -> Shrink:
    """The problem at the largest sizes 2**-k of its own that fit `budget` elements. Raises
    TaskError naming the cause when no size fits or runs."""
    if budget < 1:
        raise TaskError(f"the element budget must be at least 1, not {budget}")
    try:
        sites = find_sites(source)
    except SyntaxError as exc:
        raise TaskError(f"the problem does not parse: {exc.msg} at line {exc.lineno}") from None
    deepest = max((max(s.value) if isinstance(s.value, tuple) else s.value).bit_length() for s in sites) if sites else 0
    chosen: Optional[Trial] = None
    last_error: Optional[str] = None
    larger = ""
    for k in range(deepest, -1, -1):  # from the smallest sizes up
        trial = run_trial(rewrite(source, sites, k), k, budget, seed)
        if trial.over_budget:
            larger = f" (sizes divided by {2**k} hold {trial.elements} or more)"
            break
        if trial.error is None:
            chosen = trial
        else:
            last_error = trial.error
    if chosen is None:
        if last_error is not None and not larger:
            raise TaskError(f"the problem does not run at any of its sizes under {budget} elements: {last_error}")
        if last_error is not None:
            raise TaskError(f"no reduced size of the problem under {budget} elements runs: {last_error}; a larger "
                            f"budget{larger} may")
        smallest = run_trial(rewrite(source, sites, deepest), deepest, budget, seed)
        if smallest.error is not None:
            raise TaskError(f"the problem does not run at reduced sizes: {smallest.error}")
        raise TaskError(f"the problem holds {smallest.elements} or more elements at its smallest reduced sizes "
                        f"({len(sites)} size constants above {KEEP_AT_MOST}, each divided down to 1): give a "
                        f"budget of at least that")
    sizes = [{"name": s.name, "line": s.line, "from": s.value, "to": scaled(s.value, chosen.k)}
             for s in sites if scaled(s.value, chosen.k) != s.value]
    header = _header(budget, chosen.k, sizes) if sizes else ""
    assert chosen.elements is not None
    return Shrink(rewrite(source, sites, chosen.k, header), budget, 2**chosen.k, chosen.elements, sizes)


def shrink_file(path: str, budget: int, seed: int = 1) -> Shrink:
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as exc:
        raise TaskError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return shrink_source(source, budget, seed)
    except TaskError as exc:
        raise TaskError(f"{path}: {exc.message}") from None


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mblast_bundle shrink", description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("--elements", type=int, required=True,
                        help="budget: one forward's inputs, parameters and outputs together")
    parser.add_argument("--out", help="write the shrunken problem here (default: stdout)")
    parser.add_argument("--json", action="store_true", help="print the report (factor, sizes) as JSON on stdout")
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    try:
        result = shrink_file(args.problem, args.elements)
    except WorkerError as exc:
        print(f"mblast_bundle shrink: {exc.message}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(result.source)
    elif not args.json:
        sys.stdout.write(result.source)
    if args.json:
        print(json.dumps(result.report()))
    return 0

