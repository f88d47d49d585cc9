"""Axis values of one workload: const axes from the definition, var axes from the workload, expr
axes computed from the others with the arithmetic that docs/definition.md allows."""

import ast
import operator
from typing import Callable, Dict, Mapping

from .formats import Axis, FormatError

_BINARY: Dict[type, Callable[[int, int], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: Dict[type, Callable[[int], object]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate(expression: str, values: Mapping[str, int], where: str) -> int:
    """The integer value of an axis expression; FormatError for anything outside +, -, *, /, //, %,
    **, parentheses, integer literals and known axis names, or a result that is not a whole number."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise FormatError(where, f"expression {expression!r} does not parse: {exc.msg}") from None

    def value(node: ast.AST) -> object:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise FormatError(where, f"expression {expression!r} names {node.id!r}, which has no value here")
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))  # type: ignore[arg-type]
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value(node.operand))  # type: ignore[arg-type]
        raise FormatError(where, f"expression {expression!r} uses {type(node).__name__}, which axis expressions "
                                 "do not allow (only + - * / // % ** and parentheses)")

    try:
        result = value(tree)
    except ZeroDivisionError:
        raise FormatError(where, f"expression {expression!r} divides by zero") from None
    if isinstance(result, float) and result.is_integer():
        result = int(result)
    if not isinstance(result, int):
        raise FormatError(where, f"expression {expression!r} gives {result!r}, not a whole number")
    return result


def resolve(axes: Mapping[str, Axis], bound: Mapping[str, int], where: str) -> Dict[str, int]:
    """Every axis's value: consts, the workload's vars, then exprs in an order their references
    allow (an expr may name another expr)."""
    values: Dict[str, int] = {}
    for name, axis in axes.items():
        if axis.kind == "const":
            values[name] = int(axis.value)  # type: ignore[arg-type]
        elif axis.kind == "var":
            if name not in bound:
                raise FormatError(f"{where}.axes", f"var axis {name!r} has no value")
            values[name] = bound[name]
    pending = {n: a for n, a in axes.items() if a.kind == "expr"}
    while pending:
        progressed = False
        for name, axis in list(pending.items()):
            names = {n.id for n in ast.walk(ast.parse(str(axis.expression), mode="eval")) if isinstance(n, ast.Name)}
            if names <= values.keys():
                values[name] = evaluate(str(axis.expression), values, f"definition axes.{name}.expression")
                del pending[name]
                progressed = True
        if not progressed:
            raise FormatError("definition axes", f"expr axes {sorted(pending)} refer to each other or to unknown axes")
    return values


def check_constraints(constraints: list, values: Mapping[str, int], where: str) -> None:
    """Each constraint ("H_qo == H_kv * H_r") holds for these axis values."""
    for i, text in enumerate(constraints):
        left, op, right = _split_comparison(text, f"definition constraints[{i}]")
        a = evaluate(left, values, f"definition constraints[{i}]")
        b = evaluate(right, values, f"definition constraints[{i}]")
        if not _COMPARE[op](a, b):
            raise FormatError(where, f"constraint {text!r} does not hold ({a} {op} {b} is false)")


_COMPARE: Dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


def _split_comparison(text: str, where: str) -> tuple:
    for op in ("==", "!=", "<=", ">=", "<", ">"):
        if op in text:
            left, right = text.split(op, 1)
            return left.strip(), op, right.strip()
    raise FormatError(where, f"constraint {text!r} has no comparison (==, !=, <=, >=, <, >)")
