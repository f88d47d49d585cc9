"""Importing problem and candidate files as fresh modules, with errors that name the cause."""

import hashlib
import importlib.util
import itertools
import os
import sys
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, List, Optional, Type

import torch

from .compare import Tol
from .errors import CandidateLoadError, TaskError, WorkerError

_counter = itertools.count()


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def import_file(path: str, role: str, error_cls: Type[WorkerError], add_dir_to_path: bool) -> ModuleType:
    """Execute a file as a new module with a unique name (the same file may load twice)."""
    if not os.path.isfile(path):
        raise error_cls(f"{path}: no such file")
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()[:12]
    name = f"mblast_{role}_{digest}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise error_cls(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up here
    directory = os.path.dirname(os.path.abspath(path))
    if add_dir_to_path:
        sys.path.insert(0, directory)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise error_cls(f"{path}: SyntaxError at line {exc.lineno}: {exc.msg}", traceback.format_exc()) from None
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise error_cls(f"{path}: import raised {describe(exc)}", traceback.format_exc()) from None
    finally:
        if add_dir_to_path:
            try:
                sys.path.remove(directory)
            except ValueError:
                pass
    return module


@dataclass
class Problem:
    path: str
    source: bytes
    model_cls: Type[torch.nn.Module]
    get_inputs: Callable[[], Any]
    get_init_inputs: Callable[[], Any]
    tolerance: Optional[Tol] = None  # MBLAST_TOLERANCE, where the problem sets its own


def declared_tolerance(path: str, raw: Any) -> Optional[Tol]:
    """A problem's MBLAST_TOLERANCE: {"atol", "rtol", optional "matched_ratio" in (0, 1], optional
    "error_cap" >= 0 or None}, as problem files of SOL-ExecBench workloads (mblast_sol) set it."""
    if raw is None:
        return None

    def number(key: str, default: Any) -> Any:
        value = raw.get(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise TaskError(f"{path}: MBLAST_TOLERANCE[{key!r}] must be a number >= 0, got {value!r}")
        return float(value)

    if not isinstance(raw, dict):
        raise TaskError(f"{path}: MBLAST_TOLERANCE must be a dict, got {type(raw).__name__}")
    ratio = number("matched_ratio", 1.0)
    if not 0 < ratio <= 1:
        raise TaskError(f"{path}: MBLAST_TOLERANCE['matched_ratio'] must be in (0, 1], got {ratio}")
    return Tol(number("atol", 1e-4), number("rtol", 1e-4), ratio, number("error_cap", None), widen="add")


def load_problem(path: str) -> Problem:
    module = import_file(path, "problem", TaskError, add_dir_to_path=False)
    model_cls = getattr(module, "Model", None)
    if not isinstance(model_cls, type):
        raise TaskError(f"{path}: no class Model")
    if not issubclass(model_cls, torch.nn.Module):
        raise TaskError(f"{path}: Model is not a torch.nn.Module subclass")
    for fn_name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, fn_name, None)):
            raise TaskError(f"{path}: no function {fn_name}()")
    with open(path, "rb") as fh:
        source = fh.read()
    tolerance = declared_tolerance(path, getattr(module, "MBLAST_TOLERANCE", None))
    return Problem(path, source, model_cls, module.get_inputs, module.get_init_inputs, tolerance)


@dataclass
class Candidate:
    path: str
    model_cls: Type[torch.nn.Module]
    # The file has no ModelNew and its Model is used: how a problem is checked against itself.
    is_reference: bool


def load_candidate(path: str) -> Candidate:
    module = import_file(path, "candidate", CandidateLoadError, add_dir_to_path=True)
    cls = getattr(module, "ModelNew", None)
    is_reference = False
    if cls is None:
        cls = getattr(module, "Model", None)
        is_reference = cls is not None
    if not isinstance(cls, type):
        raise CandidateLoadError(f"{path}: no class ModelNew")
    if not issubclass(cls, torch.nn.Module):
        raise CandidateLoadError(f"{path}: {cls.__name__} is not a torch.nn.Module subclass")
    return Candidate(path, cls, is_reference)


def call_input_fn(problem: Problem, fn_name: str) -> List[Any]:
    """get_inputs() / get_init_inputs() as a list, or a TaskError naming the cause."""
    fn = problem.get_inputs if fn_name == "get_inputs" else problem.get_init_inputs
    try:
        value = fn()
    except (Exception, SystemExit) as exc:
        raise TaskError(f"{problem.path}: {fn_name}() raised {describe(exc)}", traceback.format_exc()) from None
    if isinstance(value, (list, tuple)):
        return list(value)
    raise TaskError(f"{problem.path}: {fn_name}() returned {type(value).__name__}, expected a list")


def construct(
    cls: Type[torch.nn.Module],
    init_inputs: List[Any],
    seed: int,
    device: torch.device,
    path: str,
    error_cls: Type[WorkerError],
) -> torch.nn.Module:
    torch.manual_seed(seed)
    try:
        model = _build_on(cls, init_inputs, device)
        model = model.to(device)
    except (Exception, SystemExit) as exc:
        raise error_cls(f"{path}: {cls.__name__}(*get_init_inputs()) raised {describe(exc)}", traceback.format_exc()) from None
    if not isinstance(model, torch.nn.Module):
        raise error_cls(f"{path}: {cls.__name__}.to() did not return a module")
    return model


def _build_on(cls: Type[torch.nn.Module], init_inputs: List[Any], device: torch.device) -> torch.nn.Module:
    """The model built with the device as default (torch >= 2.0, CUDA): large layers initialise
    there in milliseconds instead of seconds on the CPU. A model that cannot be built that way
    is built on the CPU."""
    if device.type == "cuda" and hasattr(device, "__enter__"):
        state = torch.cuda.get_rng_state(device)
        try:
            with device:
                return cls(*init_inputs)
        except Exception:  # noqa: BLE001 - e.g. CPU-only ops in __init__
            torch.cuda.set_rng_state(state, device)
    return cls(*init_inputs)


def copy_matching_state(src: torch.nn.Module, dst: torch.nn.Module) -> int:
    """Copy parameters/buffers whose names and shapes match so both models agree. Returns the count."""
    src_state = src.state_dict()
    copied = 0
    with torch.no_grad():
        for name, tensor in dst.state_dict().items():
            other: Optional[torch.Tensor] = src_state.get(name)
            if other is not None and isinstance(tensor, torch.Tensor) and other.shape == tensor.shape:
                tensor.copy_(other)
                copied += 1
    return copied
