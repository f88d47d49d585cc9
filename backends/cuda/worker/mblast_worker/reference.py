"""Float64 reference outputs, computed once per seed and cached on disk.

The cache is a plain directory of torch.save files keyed by content; a failure to read
or write it is never fatal (it only costs a recomputation).
"""

import hashlib
import json
import inspect
import os
import tempfile
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

import torch

from . import WORKER_VERSION
from .errors import TaskError
from .guards import Tf32Setting, apply_tf32
from .loader import describe
from .outputs import kind_error, output_list
from .phases import Phases
from .tensors import clone_all, fingerprint, map_tensors

FLOAT64 = "float64"
FLOAT32_STRICT = "float32-strict"
_STRICT_FP32 = Tf32Setting(matmul=False, cudnn=False)
_LOAD_KW = {"weights_only": True} if "weights_only" in inspect.signature(torch.load).parameters else {}



# Largest reference (all outputs of one seed, float64) written to the cache.
MAX_CACHED_REFERENCE_BYTES = int(os.environ.get("MBLAST_REFERENCE_CACHE_MAX_MB", "512")) * 2**20

@dataclass
class Reference:
    outputs: List[torch.Tensor]
    precision: str


@dataclass
class ReferenceStore:
    problem_path: str
    problem_source: bytes
    init_seed: int
    device: torch.device
    cache_dir: Optional[str]
    # Builds a fresh fp32 reference model identical to the one the eager run uses.
    build_model: Callable[[], torch.nn.Module]
    restore_tf32: Callable[[], None]
    phases: Phases = field(default_factory=Phases)
    # Where get_inputs() ran: "host" (CPU, then copied) or "device"; the values differ, so does the key.
    input_origin: str = "host"
    cache_hits: int = 0
    computations: int = 0
    precision: Optional[str] = None
    notes: List[str] = field(default_factory=list)
    _model64: Optional[torch.nn.Module] = None
    _model32: Optional[torch.nn.Module] = None

    def get(self, seed: Optional[int], inputs: List[Any]) -> Reference:
        """Reference outputs for inputs drawn with seed (None: not cacheable), on the device."""
        with self.phases.phase("reference"):
            return self._get(seed, inputs)

    def _get(self, seed: Optional[int], inputs: List[Any]) -> Reference:
        fp = fingerprint(inputs)
        path = self._cache_path(seed) if seed is not None else None
        if path is not None:
            cached = self._load(path, fp)
            if cached is not None:
                self.cache_hits += 1
                self._note_precision(cached.precision)
                return Reference([t.to(self.device) for t in cached.outputs], cached.precision)
        ref = self._compute(seed, inputs)
        self.computations += 1
        self._note_precision(ref.precision)
        if path is not None:
            self._store(path, ref, fp)
        return ref

    def _note_precision(self, precision: str) -> None:
        if self.precision != FLOAT32_STRICT:
            self.precision = precision

    def _compute(self, seed: Optional[int], inputs: List[Any]) -> Reference:
        if self.precision != FLOAT32_STRICT:
            try:
                if self._model64 is None:
                    self._model64 = self.build_model().to(torch.float64)
                return Reference(self._run(self._model64, _private_f64(inputs), seed), FLOAT64)
            except TaskError:
                raise
            except Exception as exc:  # noqa: BLE001 - some ops have no float64 kernel
                self.notes.append(f"float64 reference failed ({describe(exc)}); using float32 with TF32 off")
                self.precision = FLOAT32_STRICT
        if self._model32 is None:
            self._model32 = self.build_model()
        apply_tf32(_STRICT_FP32)
        try:
            return Reference(self._run(self._model32, clone_all(inputs), seed), FLOAT32_STRICT)
        except Exception as exc:  # noqa: BLE001
            raise TaskError(f"{self.problem_path}: Model.forward raised {describe(exc)}", traceback.format_exc()) from None
        finally:
            self.restore_tf32()

    def _run(self, model: torch.nn.Module, inputs: List[Any], seed: Optional[int]) -> List[torch.Tensor]:
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            raw = model(*inputs)
        outs = output_list(raw)
        if outs is None or not all(isinstance(o, torch.Tensor) for o in outs):
            raise TaskError(f"{self.problem_path}: {kind_error(raw)}")
        return [o.detach().clone() for o in outs]

    def _cache_path(self, seed: int) -> Optional[str]:
        if not self.cache_dir:
            return None
        h = hashlib.sha256()
        h.update(self.problem_source)
        torch_mm = ".".join(torch.__version__.split(".")[:2])
        h.update(f"|seed={seed}|init={self.init_seed}|device={self.device.type}|inputs={self.input_origin}"
                 f"|worker={WORKER_VERSION}|torch={torch_mm}".encode())
        return os.path.join(self.cache_dir, f"ref-{h.hexdigest()}.pt")

    def _load(self, path: str, fp: Tuple[Any, ...]) -> Optional[Reference]:
        if not os.path.exists(path):
            return None
        try:
            entry = torch.load(path, map_location="cpu", **_LOAD_KW)
            if entry.get("inputs") != _plain(fp):
                self.notes.append("cached reference ignored: get_inputs() is not deterministic under its seed")
                return None
            return Reference(list(entry["outputs"]), str(entry["precision"]))
        except Exception as exc:  # noqa: BLE001 - a broken cache entry only costs a recomputation
            self.notes.append(f"reference cache read failed: {describe(exc)}")
            return None

    def _store(self, path: str, ref: Reference, fp: Tuple[Any, ...]) -> None:
        size = sum(t.numel() * t.element_size() for t in ref.outputs)
        if size > MAX_CACHED_REFERENCE_BYTES:
            # KernelBench level 1 has float64 outputs of 12.8 GB per seed: on disk they would cost
            # more than recomputing them on the GPU, and would fill the disk.
            self.notes.append(
                f"reference not cached: {size / 2**20:.0f} MiB per seed is over the "
                f"{MAX_CACHED_REFERENCE_BYTES // 2**20} MiB limit (MBLAST_REFERENCE_CACHE_MAX_MB)"
            )
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            entry = {"outputs": [t.detach().cpu() for t in ref.outputs], "precision": ref.precision, "inputs": _plain(fp)}
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".ref-", suffix=".tmp")
            os.close(fd)
            try:
                torch.save(entry, tmp)
                os.replace(tmp, path)  # atomic: concurrent workers never see half a file
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except Exception as exc:  # noqa: BLE001
            self.notes.append(f"reference cache write failed: {describe(exc)}")


def _private_f64(inputs: List[Any]) -> List[Any]:
    """upcast(clone_all(inputs)) in one copy per tensor: floating inputs become float64 copies,
    the others plain copies (the model may change its inputs in place)."""
    return map_tensors(inputs, lambda t: t.detach().to(torch.float64, copy=True) if t.is_floating_point()
                       else t.detach().clone())


def _plain(fp: Tuple[Any, ...]) -> str:
    """Fingerprints as JSON text: torch 1.13's weights_only loader rejects pickled floats,
    and repr-based JSON floats round-trip exactly."""
    return json.dumps([[list(shape), float(a), float(b)] for shape, a, b in fp])
