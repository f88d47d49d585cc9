"""A workload's inputs, made where the judge asks for them (inside its get_inputs(), under the
trial's seed and, on CUDA, on the device), in the definition's order.

Random values follow the dtype rules of SOL-ExecBench's harness (its core/bench/io.py): standard
normal for float64/32/16 and bfloat16, standard normal clamped to [-2, 2] for float8, integers
uniform in [-1024, 1024) (int8: its full range), booleans uniform. Its name-based heuristics (norm
weights set to one, weight matrices scaled by 1/sqrt(fan-in), ...) are not reproduced: values
differ from that harness's, shapes and dtypes do not.
"""

import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import torch

from .axes import resolve
from .formats import Definition, FormatError, Workload, shape_of
from .safetensors import read_tensor

_INT_RANGES = {"int8": (-128, 128), "int16": (-1024, 1024), "int32": (-1024, 1024), "int64": (-1024, 1024)}

CustomFn = Callable[[Dict[str, Any], torch.device], Dict[str, Any]]


def torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise FormatError("dtype", f"{name} is not available in torch {torch.__version__}")
    return dtype


def random_tensor(shape: List[int], dtype_name: str, device: torch.device) -> torch.Tensor:
    dtype = torch_dtype(dtype_name)
    if dtype_name.startswith("float8"):
        return torch.randn(shape, dtype=torch.float32, device=device).clamp_(-2.0, 2.0).to(dtype)
    if dtype_name.startswith("float4"):
        raise FormatError("dtype", f"random {dtype_name} inputs are not supported by mblast yet")
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    low, high = _INT_RANGES[dtype_name]
    return torch.randint(low, high, shape, dtype=dtype, device=device)


def _default_device() -> torch.device:
    """Where get_inputs() is asked to make tensors: the device of `with torch.device(...)` the
    judge opens around it (torch >= 2.0), else the CPU (the judge moves them)."""
    return torch.empty(0).device


@dataclass
class WorkloadInputs:
    definition: Definition
    workload: Workload
    directory: str  # the problem directory, which safetensors paths are relative to
    custom: Optional[CustomFn] = None

    def __post_init__(self) -> None:
        self.axes = resolve(self.definition.axes, self.workload.axes, f"workload {self.workload.uuid}")

    def scalars(self) -> Dict[str, Any]:
        return {n: s.value for n, s in self.workload.inputs.items() if s.kind == "scalar"}

    def make(self) -> List[Any]:
        device = _default_device()
        custom = self._custom_values(device)
        values: List[Any] = []
        for name, spec in self.definition.inputs.items():
            source = self.workload.inputs[name]
            if source.kind == "scalar":
                values.append(source.value)
            elif source.kind == "custom":
                values.append(custom[name])
            elif source.kind == "safetensors":
                path = os.path.join(self.directory, str(source.path))
                values.append(read_tensor(path, str(source.tensor_key)).to(device))
            elif spec.shape is None:
                values.append(random_tensor([], spec.dtype, device).item())
            else:
                values.append(random_tensor(shape_of(spec, self.axes), spec.dtype, device))
        return values

    def _custom_values(self, device: torch.device) -> Dict[str, Any]:
        wanted = [n for n, s in self.workload.inputs.items() if s.kind == "custom"]
        if not wanted:
            return {}
        assert self.custom is not None  # formats.parse_input_source checks the entry point exists
        made = self.custom({**self.axes, **self.scalars()}, device)
        if not isinstance(made, dict):
            raise FormatError(f"reference {self.definition.custom_inputs_entrypoint}()",
                              f"returned {type(made).__name__}, not a dict of input name to tensor")
        missing = [n for n in wanted if n not in made]
        if missing:
            raise FormatError(f"reference {self.definition.custom_inputs_entrypoint}()",
                              f"returned no value for custom input(s) {missing}")
        return {n: made[n] for n in wanted}


def output_tuple(result: Any, definition: Definition) -> Any:
    """The reference's outputs as the judge compares them: a dict returned by name becomes a tuple in
    the definition's output order; a list (a C++ solution's std::vector) a tuple; a tensor or a tuple stays as it is."""
    if isinstance(result, dict):
        return tuple(result[name] for name in definition.outputs)
    if isinstance(result, list):  # a C++ solution's std::vector<torch::Tensor>
        return tuple(result)
    return result
