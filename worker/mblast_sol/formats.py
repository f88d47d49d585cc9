"""definition.json and workload.jsonl, parsed into typed records and checked: every error names
the file and the field (FormatError), so that a bad problem is fixed where it is wrong."""

import ast
import json
import keyword
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1",
          "float4_e2m1fn_x2", "int64", "int32", "int16", "int8", "bool")
INPUT_SOURCES = ("random", "scalar", "safetensors", "custom")


class FormatError(ValueError):
    """A problem's files break their format: `where` is the file and field, `message` what is wrong."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


@dataclass
class Axis:
    kind: str  # "const" | "var" | "expr"
    value: Optional[int] = None  # const
    expression: Optional[str] = None  # expr


@dataclass
class TensorSpec:
    shape: Optional[List[Any]]  # axis names (or integer literals); None: a Python scalar
    dtype: str


def shape_of(spec: TensorSpec, values: Mapping[str, int]) -> List[int]:
    """The tensor's shape at these axis values."""
    return [values[d] if isinstance(d, str) else int(d) for d in (spec.shape or [])]


@dataclass
class Definition:
    name: str
    axes: Dict[str, Axis]
    inputs: Dict[str, TensorSpec]
    outputs: Dict[str, TensorSpec]
    reference: str
    op_type: Optional[str] = None
    constraints: List[str] = field(default_factory=list)
    custom_inputs_entrypoint: Optional[str] = None


@dataclass
class Tolerance:
    """docs/workload.md's defaults."""

    max_atol: float = 1e-2
    max_rtol: float = 1e-2
    required_matched_ratio: float = 0.99
    max_error_cap: Optional[float] = None
    allow_negative_inf: bool = False

    def to_json(self) -> Dict[str, Any]:
        return {"max_atol": self.max_atol, "max_rtol": self.max_rtol,
                "required_matched_ratio": self.required_matched_ratio, "max_error_cap": self.max_error_cap,
                "allow_negative_inf": self.allow_negative_inf}


@dataclass
class InputSource:
    kind: str  # one of INPUT_SOURCES
    value: Any = None  # scalar
    path: Optional[str] = None  # safetensors, relative to the problem directory
    tensor_key: Optional[str] = None


@dataclass
class Workload:
    uuid: str
    axes: Dict[str, int]
    inputs: Dict[str, InputSource]
    tolerance: Tolerance


# ---- small typed readers -------------------------------------------------------------------------


def _object(raw: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, dict):
        raise FormatError(where, f"must be an object, got {type(raw).__name__}")
    return raw


def _string(raw: Mapping[str, Any], key: str, where: str, required: bool = True) -> Optional[str]:
    if key not in raw or raw[key] is None:
        if required:
            raise FormatError(f"{where}.{key}", "is required")
        return None
    if not isinstance(raw[key], str) or (required and not raw[key]):
        raise FormatError(f"{where}.{key}", f"must be a non-empty string, got {raw[key]!r}")
    return raw[key]


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FormatError(where, f"must be an integer, got {value!r}")
    return value


def _number(raw: Mapping[str, Any], key: str, where: str, default: Optional[float]) -> Optional[float]:
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise FormatError(f"{where}.{key}", f"must be a number >= 0, got {value!r}")
    return float(value)


def _no_unknown(raw: Mapping[str, Any], known: Tuple[str, ...], where: str) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise FormatError(where, f"unknown field(s) {unknown}; expected some of {list(known)}")


# ---- definition.json -----------------------------------------------------------------------------


def parse_axis(raw: Any, where: str) -> Axis:
    obj = _object(raw, where)
    kind = obj.get("type")
    if kind == "const":
        value = _integer(obj.get("value"), f"{where}.value")
        if value < 0:
            raise FormatError(f"{where}.value", f"must be >= 0, got {value}")
        return Axis("const", value=value)
    if kind == "var":
        return Axis("var")
    if kind == "expr":
        return Axis("expr", expression=_string(obj, "expression", where))
    raise FormatError(f"{where}.type", f"must be const, var or expr, got {kind!r}")


def parse_tensor(raw: Any, axes: Mapping[str, Axis], where: str) -> TensorSpec:
    obj = _object(raw, where)
    if "shape" not in obj:
        raise FormatError(f"{where}.shape", "is required (null for a Python scalar, [] for a 0-d tensor)")
    shape = obj["shape"]
    if shape is not None:
        if not isinstance(shape, list):
            raise FormatError(f"{where}.shape", f"must be a list of axis names or null, got {shape!r}")
        for i, dim in enumerate(shape):
            if isinstance(dim, str):
                if dim not in axes:
                    raise FormatError(f"{where}.shape[{i}]", f"names axis {dim!r}, which axes do not define "
                                                             f"(defined: {sorted(axes)})")
            elif isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
                raise FormatError(f"{where}.shape[{i}]", f"must be an axis name, got {dim!r}")
    dtype = _string(obj, "dtype", where)
    if dtype not in DTYPES:
        raise FormatError(f"{where}.dtype", f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return TensorSpec(shape, str(dtype))


def _check_expression_names(expression: str, axes: Mapping[str, Axis], where: str) -> None:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise FormatError(where, f"{expression!r} does not parse: {exc.msg}") from None
    unknown = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(axes))
    if unknown:
        raise FormatError(where, f"{expression!r} names {unknown}, which are not axes (axes: {sorted(axes)})")


def _functions(source: str, where: str) -> List[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise FormatError(where, f"is not valid Python: line {exc.lineno}: {exc.msg}") from None
    return [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def parse_definition(raw: Any, where: str = "definition.json", check_reference: bool = True) -> Definition:
    """check_reference=False: the reference source is checked elsewhere (a problem file written
    from a checked definition holds it as code, not in the JSON)."""
    obj = _object(raw, where)
    name = str(_string(obj, "name", where))
    axes_raw = _object(obj.get("axes"), f"{where}.axes")
    axes = {k: parse_axis(v, f"{where}.axes.{k}") for k, v in axes_raw.items()}
    for k, axis in axes.items():
        if axis.kind == "expr":
            _check_expression_names(str(axis.expression), axes, f"{where}.axes.{k}.expression")
    inputs = {k: parse_tensor(v, axes, f"{where}.inputs.{k}") for k, v in _object(obj.get("inputs"),
                                                                                  f"{where}.inputs").items()}
    outputs = {k: parse_tensor(v, axes, f"{where}.outputs.{k}") for k, v in _object(obj.get("outputs"),
                                                                                    f"{where}.outputs").items()}
    if not outputs:
        raise FormatError(f"{where}.outputs", "names no output")
    for group, names in (("inputs", inputs), ("outputs", outputs)):
        for n in names:
            if not n.isidentifier() or keyword.iskeyword(n):
                raise FormatError(f"{where}.{group}.{n}", "is not a Python identifier, so run() cannot take it "
                                                          "as a parameter")
    for out in outputs:
        if outputs[out].shape is None:
            raise FormatError(f"{where}.outputs.{out}.shape", "must be a list: outputs are tensors")
    reference = str(_string(obj, "reference", where)) if check_reference else str(obj.get("reference") or "")
    functions = _functions(reference, f"{where}.reference") if check_reference else []
    if check_reference and "run" not in functions:
        raise FormatError(f"{where}.reference", "defines no top-level function run()")
    entry = _string(obj, "custom_inputs_entrypoint", where, required=False)
    if check_reference and entry is not None and entry not in functions:
        raise FormatError(f"{where}.custom_inputs_entrypoint", f"names {entry!r}, which the reference does not "
                                                                f"define (it defines {functions})")
    constraints = obj.get("constraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise FormatError(f"{where}.constraints", "must be a list of strings")
    return Definition(name, axes, inputs, outputs, reference, op_type=_string(obj, "op_type", where, required=False),
                      constraints=list(constraints), custom_inputs_entrypoint=entry)


# ---- workload.jsonl ------------------------------------------------------------------------------


def parse_tolerance(raw: Any, where: str) -> Tolerance:
    if raw is None:
        return Tolerance()
    obj = _object(raw, where)
    _no_unknown(obj, ("max_atol", "max_rtol", "required_matched_ratio", "max_error_cap", "allow_negative_inf"), where)
    tol = Tolerance(max_atol=float(_number(obj, "max_atol", where, 1e-2)),  # type: ignore[arg-type]
                    max_rtol=float(_number(obj, "max_rtol", where, 1e-2)),  # type: ignore[arg-type]
                    required_matched_ratio=float(_number(obj, "required_matched_ratio", where, 0.99)),  # type: ignore
                    max_error_cap=_number(obj, "max_error_cap", where, None))
    if not 0 < tol.required_matched_ratio <= 1:
        raise FormatError(f"{where}.required_matched_ratio", f"must be in (0, 1], got {tol.required_matched_ratio}")
    negative_inf = obj.get("allow_negative_inf", False)
    if not isinstance(negative_inf, bool):
        raise FormatError(f"{where}.allow_negative_inf", f"must be true or false, got {negative_inf!r}")
    tol.allow_negative_inf = negative_inf
    return tol


def parse_input_source(raw: Any, spec: TensorSpec, definition: Definition, where: str) -> InputSource:
    obj = _object(raw, where)
    kind = obj.get("type")
    if kind not in INPUT_SOURCES:
        raise FormatError(f"{where}.type", f"must be one of {', '.join(INPUT_SOURCES)}, got {kind!r}")
    if kind == "scalar":
        value = obj.get("value")
        if spec.shape is not None:
            raise FormatError(where, "is a scalar source, but the definition gives this input a shape "
                                     "(scalars are inputs with \"shape\": null)")
        if isinstance(value, bool) or isinstance(value, (int, float)):
            return InputSource("scalar", value=value)
        raise FormatError(f"{where}.value", f"must be an int, float or bool, got {value!r}")
    if kind == "safetensors":
        path = str(_string(obj, "path", where))
        if os.path.isabs(path) or ".." in path.split("/"):
            raise FormatError(f"{where}.path", f"must be relative to the problem directory, got {path!r}")
        return InputSource("safetensors", path=path, tensor_key=_string(obj, "tensor_key", where))
    if kind == "custom" and definition.custom_inputs_entrypoint is None:
        raise FormatError(where, "is a custom source, but the definition has no custom_inputs_entrypoint")
    return InputSource(str(kind))


def parse_workload(raw: Any, definition: Definition, where: str) -> Workload:
    obj = _object(raw, where)
    uuid = str(_string(obj, "uuid", where))
    axes_raw = _object(obj.get("axes", {}), f"{where}.axes")
    var_axes = [n for n, a in definition.axes.items() if a.kind == "var"]
    axes: Dict[str, int] = {}
    for name, value in axes_raw.items():
        if name not in definition.axes:
            raise FormatError(f"{where}.axes.{name}", f"is not an axis of the definition (var axes: {var_axes})")
        if definition.axes[name].kind != "var":
            raise FormatError(f"{where}.axes.{name}", f"is a {definition.axes[name].kind} axis; only var axes take "
                                                      "a value in a workload")
        axes[name] = _integer(value, f"{where}.axes.{name}")
        if axes[name] < 0:
            raise FormatError(f"{where}.axes.{name}", f"must be >= 0, got {axes[name]}")
    missing = [n for n in var_axes if n not in axes]
    if missing:
        raise FormatError(f"{where}.axes", f"binds no value to var axis/axes {missing}")
    inputs_raw = _object(obj.get("inputs", {}), f"{where}.inputs")
    unknown = sorted(set(inputs_raw) - set(definition.inputs))
    if unknown:
        raise FormatError(f"{where}.inputs", f"names {unknown}, which are not inputs of the definition "
                                             f"({list(definition.inputs)})")
    inputs = {n: parse_input_source(inputs_raw[n], spec, definition, f"{where}.inputs.{n}") if n in inputs_raw
              else InputSource("random") for n, spec in definition.inputs.items()}
    for name, spec in definition.inputs.items():
        if spec.shape is None and inputs[name].kind == "safetensors":
            raise FormatError(f"{where}.inputs.{name}", "is a scalar input (\"shape\": null): a safetensors "
                                                        "source cannot give it")
    return Workload(uuid, axes, inputs, parse_tolerance(obj.get("tolerance"), f"{where}.tolerance"))


@dataclass
class ProblemDir:
    directory: str
    definition: Definition
    workloads: List[Workload]
    raw_definition: Dict[str, Any]
    raw_workloads: List[Dict[str, Any]]


def load_problem_dir(path: str) -> ProblemDir:
    """A problem from its directory or its definition.json, checked."""
    directory = os.path.dirname(os.path.abspath(path)) if os.path.isfile(path) else os.path.abspath(path)
    definition_path = os.path.join(directory, "definition.json")
    workload_path = os.path.join(directory, "workload.jsonl")
    for needed in (definition_path, workload_path):
        if not os.path.isfile(needed):
            raise FormatError(directory, f"has no {os.path.basename(needed)} (a SOL-ExecBench problem directory "
                                         "holds definition.json and workload.jsonl)")
    raw_definition = read_json(definition_path, "definition.json")
    definition = parse_definition(raw_definition)
    workloads: List[Workload] = []
    raw_workloads: List[Dict[str, Any]] = []
    seen: Dict[str, int] = {}
    with open(workload_path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"workload.jsonl line {number}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FormatError(where, f"is not JSON: {exc.msg} at column {exc.colno}") from None
            workload = parse_workload(raw, definition, where)
            if workload.uuid in seen:
                raise FormatError(f"{where}.uuid", f"repeats {workload.uuid!r} of line {seen[workload.uuid]}")
            seen[workload.uuid] = number
            workloads.append(workload)
            raw_workloads.append(raw)
    if not workloads:
        raise FormatError("workload.jsonl", "holds no workload")
    return ProblemDir(directory, definition, workloads, raw_definition, raw_workloads)


def read_json(path: str, where: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise FormatError(where, f"is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
