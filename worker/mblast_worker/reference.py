"""The float64 reference: how it is computed for a problem, within the judge's memory budget.

Three plans, chosen once per problem (facts.py) from the sizes eager itself needs:

- "whole": the model in float64 on float64 copies of the inputs, on the device. For problems
  whose inputs and outputs are small next to the budget.
- "batch-chunks": the same, one slice of the batch (dim 0) at a time, for problems that treat
  each sample on its own (checked once against eager's full-batch output). A float64 copy of a
  6 GB input would otherwise need 12 GB plus its output, beyond twice what eager needs.
- "cpu": the model in float64 on the host, for large problems that mix the batch (losses over
  everything, batch statistics); device memory then holds only the inputs and outputs.

Where an op has no float64 kernel the reference falls back to float32 with TF32 off
("float32-strict"), under the same plan.
"""

import copy
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple

import torch

from .errors import TaskError
from .guards import Tf32Setting, apply_tf32
from .loader import describe
from .memory import release_cached_blocks
from .outputs import kind_error, output_list
from .tensors import flat_tensors, map_tensors

FLOAT64 = "float64"
FLOAT32_STRICT = "float32-strict"
WHOLE, BATCH_CHUNKS, CPU = "whole", "batch-chunks", "cpu"
_STRICT_FP32 = Tf32Setting(matmul=False, cudnn=False)


@dataclass
class ReferencePlan:
    mode: str = WHOLE
    chunks: int = 1  # batch slices (batch-chunks only)
    batch: int = 0  # the batch size: dim 0 of the first tensor input
    precision: str = FLOAT64

    def slices(self) -> List[Optional[slice]]:
        if self.mode != BATCH_CHUNKS or self.chunks <= 1:
            return [None]
        step = -(-self.batch // self.chunks)
        return [slice(lo, min(self.batch, lo + step)) for lo in range(0, self.batch, step)]


def batch_size(inputs: List[Any]) -> int:
    tensors = [t for t in flat_tensors(inputs) if t.dim() > 0]
    return int(tensors[0].shape[0]) if tensors else 0


def split_batch(inputs: List[Any], batch: int, sl: Optional[slice]) -> List[Any]:
    """The inputs for one batch slice: tensors whose dim 0 is the batch are sliced, the rest kept."""
    if sl is None:
        return inputs
    return map_tensors(inputs, lambda t: t[sl] if t.dim() > 0 and t.shape[0] == batch else t)


def _private(inputs: List[Any], dtype: Optional[torch.dtype], device: torch.device) -> List[Any]:
    """Copies the model may change in place: floating ones in dtype, all on device."""

    def copy_one(t: torch.Tensor) -> torch.Tensor:
        t = t.detach()
        if dtype is not None and t.is_floating_point():
            return t.to(device=device, dtype=dtype, copy=True)
        return t.to(device=device, copy=True)

    return map_tensors(inputs, copy_one)


@dataclass
class ReferenceModels:
    """The problem's model in float64 (and float32 strict where float64 fails), built lazily from
    a pristine copy of the fp32 reference model."""

    problem_path: str
    pristine: Callable[[], torch.nn.Module]
    restore_tf32: Callable[[], None]
    device: torch.device
    precision: str = FLOAT64
    notes: Optional[List[str]] = None
    _models: Optional[dict] = None

    def model(self, on_cpu: bool) -> torch.nn.Module:
        if self._models is None:
            self._models = {}
        key = (self.precision, on_cpu)
        if key not in self._models:
            self._models.clear()  # one reference model at a time: a float64 copy is large
            model = self.pristine().to("cpu")
            if self.precision == FLOAT64:
                model = model.to(torch.float64)
            self._models[key] = model if on_cpu else model.to(self.device)
        return self._models[key]

    def release(self) -> None:
        """Drops the float64 model (rebuilt on the next run)."""
        if self._models:
            self._models.clear()

    def run(self, inputs: List[Any], seed: Optional[int], on_cpu: bool) -> List[torch.Tensor]:
        """One forward of the reference model on private copies of inputs; falls back to float32
        strict for good when float64 is not supported by an op."""
        device = torch.device("cpu") if on_cpu else self.device
        if self.precision == FLOAT64:
            try:
                return self._forward(self.model(on_cpu), _private(inputs, torch.float64, device), seed)
            except TaskError:
                raise
            except Exception as exc:  # noqa: BLE001 - some ops have no float64 kernel
                if self.notes is not None:
                    self.notes.append(f"float64 reference failed ({describe(exc)}); using float32 with TF32 off")
                self.precision = FLOAT32_STRICT
        apply_tf32(_STRICT_FP32)
        try:
            return self._forward(self.model(on_cpu), _private(inputs, None, device), seed)
        except Exception as exc:  # noqa: BLE001
            raise TaskError(f"{self.problem_path}: Model.forward raised {describe(exc)}",
                            traceback.format_exc()) from None
        finally:
            self.restore_tf32()

    def _forward(self, model: torch.nn.Module, inputs: List[Any], seed: Optional[int]) -> List[torch.Tensor]:
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            raw = model(*inputs)
        outs = output_list(raw)
        if outs is None or not all(isinstance(o, torch.Tensor) for o in outs):
            raise TaskError(f"{self.problem_path}: {kind_error(raw)}")
        return [o.detach() for o in outs]


RefChunk = Tuple[Optional[slice], List[torch.Tensor]]


def iter_reference(models: ReferenceModels, plan: ReferencePlan, inputs: List[Any],
                   seed: Optional[int]) -> Iterator[RefChunk]:
    """The reference outputs for inputs, piece by piece: (batch slice or None, outputs of it)."""
    on_cpu = plan.mode == CPU
    if not on_cpu:
        # Blocks cached by earlier float32 forwards cannot serve float64 tensors of twice their
        # size (level1/88: 3.16 GiB reserved, 2.53 allocated, budget 3.0; H100, call 98). Once,
        # not per piece: the pieces reuse each other's blocks.
        release_cached_blocks(models.device)
    for sl in plan.slices():
        yield sl, models.run(split_batch(inputs, plan.batch, sl), seed, on_cpu)


def _host_memo(model: torch.nn.Module) -> dict:
    """deepcopy's memo with every parameter and buffer already copied to the host: the copy is
    made there without a second copy on the device."""
    memo: dict = {}
    for p in model.parameters():
        memo[id(p)] = torch.nn.Parameter(p.detach().to("cpu", copy=True), requires_grad=p.requires_grad)
    for b in model.buffers():
        memo[id(b)] = b.detach().to("cpu", copy=True)
    return memo


def pristine_copier(model: torch.nn.Module, rebuild: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    """Fresh copies of the model as constructed (before any forward), on the model's device. The
    pristine copy itself is kept on the host, so that it costs no device memory; rebuilds if the
    model cannot be copied."""
    try:
        first = next(iter(model.parameters()), None)
        target = first.device if first is not None else None
        pristine = copy.deepcopy(model, _host_memo(model))
    except Exception:  # noqa: BLE001
        return rebuild
    return lambda: copy.deepcopy(pristine).to(target) if target is not None else copy.deepcopy(pristine)
