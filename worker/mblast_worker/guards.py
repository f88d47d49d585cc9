"""What candidate code must not change, saved before any of it runs.

Two jobs: the worker's own clocks and events are saved originals (a patched
time.perf_counter cannot fool the timer), and a snapshot of the callables in torch's
namespaces lets the worker see, report and undo any monkey-patching (a patched
torch.matmul would also fool the in-process reference).
"""

import os
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

# Saved at import, which __main__ does before any problem or candidate code runs.
perf_counter_ns: Callable[[], int] = time.perf_counter_ns
HAS_CUDA_API: bool = hasattr(torch, "cuda") and hasattr(torch.cuda, "Event")
cuda_event_cls: Any = torch.cuda.Event if HAS_CUDA_API else None
cuda_event_record: Any = torch.cuda.Event.record if HAS_CUDA_API else None
cuda_event_elapsed: Any = torch.cuda.Event.elapsed_time if HAS_CUDA_API else None
cuda_event_synchronize: Any = torch.cuda.Event.synchronize if HAS_CUDA_API else None
cuda_synchronize: Callable[..., None] = torch.cuda.synchronize
cuda_current_stream: Callable[..., Any] = torch.cuda.current_stream
cuda_stream_synchronize: Any = torch.cuda.Stream.synchronize
cuda_sleep: Any = getattr(torch.cuda, "_sleep", None)  # a kernel that spins for N clock cycles

# Anything under these names that changes is reported as "timer_patched";
# other changes in torch's namespaces as "torch_patched".
_TIMER_PREFIXES: Tuple[str, ...] = (
    "time.",
    "torch.cuda.Event.",
    "torch.cuda.Stream.",
    "torch.testing.",
    "mblast_worker.",
)
_TIMER_NAMES = frozenset(
    {
        "torch.cuda.synchronize",
        "torch.cuda.Event",
        "torch.cuda.Stream",
        "torch.cuda.current_stream",
        "torch.cuda.current_device",
        "torch._C._cuda_synchronize",
        "torch.allclose",
        "torch.isclose",
        "torch.equal",
        "torch.abs",
        "torch.isnan",
        "torch.isfinite",
        "torch.where",
        "torch.Tensor.__eq__",
        "torch.Tensor.__ne__",
        "torch.Tensor.__sub__",
        "torch.Tensor.__abs__",
        "torch.Tensor.allclose",
        "torch.Tensor.isclose",
        "torch.Tensor.equal",
        "torch.Tensor.__torch_function__",
    }
)


def _namespaces() -> List[Tuple[str, Any]]:
    spaces: List[Tuple[str, Any]] = [
        ("time", time),
        ("torch", torch),
        ("torch._C", torch._C),
        ("torch.Tensor", torch.Tensor),
        ("torch.nn.functional", torch.nn.functional),
        ("torch.nn.Module", torch.nn.Module),
        ("torch.nn.init", torch.nn.init),
        ("torch.linalg", torch.linalg),
        ("torch.fft", torch.fft),
        ("torch.special", torch.special),
        ("torch.testing", torch.testing),
        ("torch.cuda", torch.cuda),
        ("torch.cuda.Event", torch.cuda.Event),
        ("torch.cuda.Stream", torch.cuda.Stream),
    ]
    for name in dir(torch.nn):
        obj = getattr(torch.nn, name, None)
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module) and obj is not torch.nn.Module:
            spaces.append((f"torch.nn.{name}", obj))
    for mod_name, module in list(sys.modules.items()):
        if mod_name.startswith("mblast_worker.") and isinstance(module, ModuleType):
            spaces.append((mod_name, module))
    return spaces


def _callables(owner: Any) -> Dict[str, Any]:
    try:
        items = list(vars(owner).items())
    except TypeError:
        return {}
    return {k: v for k, v in items if callable(v) or isinstance(v, (classmethod, staticmethod, property))}


@dataclass
class PatchReport:
    timer: List[str] = field(default_factory=list)
    torch: List[str] = field(default_factory=list)


@dataclass
class NamespaceSnapshot:
    """Identity of every callable in the guarded namespaces at one moment."""

    owners: Dict[str, Any]
    entries: Dict[str, Dict[str, Any]]

    @staticmethod
    def take() -> "NamespaceSnapshot":
        owners = dict(_namespaces())
        return NamespaceSnapshot(owners, {label: _callables(obj) for label, obj in owners.items()})

    def check_and_restore(self) -> PatchReport:
        """Names whose object changed or vanished since the snapshot; puts the originals back.
        New names are fine (lazy submodule imports add them)."""
        report = PatchReport()
        for label, saved in self.entries.items():
            owner = self.owners[label]
            try:
                current = vars(owner)
            except TypeError:
                continue
            for name, original in saved.items():
                now = current.get(name, _MISSING)
                if now is original:
                    continue
                if _is_torch_wrapper(now, original):
                    saved[name] = now  # torch's own lazy wrapping, e.g. dynamo's around manual_seed
                    continue
                qualified = f"{label}.{name}"
                is_timer = qualified in _TIMER_NAMES or qualified.startswith(_TIMER_PREFIXES)
                (report.timer if is_timer else report.torch).append(qualified)
                try:
                    setattr(owner, name, original)
                except (AttributeError, TypeError):
                    pass
        return report


_MISSING = object()
_TORCH_DIR: str = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _is_torch_wrapper(new: Any, original: Any) -> bool:
    """torch wraps some of its own functions lazily: importing torch._dynamo wraps
    torch.manual_seed, and the first torch.compile wraps nn.Module.__init__ to tag new
    modules. Such a replacement holds the original (as __wrapped__ or in its closure) and
    its code lives in torch's own files."""
    code = getattr(new, "__code__", None)
    if code is None or not os.path.abspath(code.co_filename).startswith(_TORCH_DIR):
        return False
    if getattr(new, "__wrapped__", None) is original:
        return True
    for cell in getattr(new, "__closure__", None) or ():
        try:
            if cell.cell_contents is original:
                return True
        except ValueError:  # an empty cell
            continue
    return False


@dataclass(frozen=True)
class Tf32Setting:
    matmul: bool
    cudnn: bool


def read_precision_state() -> Dict[str, str]:
    """Every readable precision knob, as text. torch >= 2.9 raises on some legacy getters
    after the new fp32_precision API was used; the error text then stands for the value."""
    readers: Dict[str, Callable[[], Any]] = {
        "cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision,
        "fp32_precision": lambda: torch.backends.fp32_precision,  # type: ignore[attr-defined]
        "cuda.matmul.fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,  # type: ignore[attr-defined]
        "cudnn.fp32_precision": lambda: torch.backends.cudnn.fp32_precision,  # type: ignore[attr-defined]
        "cudnn.conv.fp32_precision": lambda: torch.backends.cudnn.conv.fp32_precision,  # type: ignore[attr-defined]
        "cudnn.rnn.fp32_precision": lambda: torch.backends.cudnn.rnn.fp32_precision,  # type: ignore[attr-defined]
    }
    state: Dict[str, str] = {}
    for name, read in readers.items():
        try:
            state[name] = str(read())
        except AttributeError:
            continue
        except Exception as exc:  # noqa: BLE001 - the failure itself is the observation
            state[name] = f"<unreadable: {type(exc).__name__}>"
    return state


def apply_tf32(setting: Tf32Setting) -> None:
    # Only the legacy setters: they keep both generations of the API readable.
    torch.backends.cuda.matmul.allow_tf32 = setting.matmul
    torch.backends.cudnn.allow_tf32 = setting.cudnn


def _read_default_tf32() -> Tf32Setting:
    try:
        return Tf32Setting(bool(torch.backends.cuda.matmul.allow_tf32), bool(torch.backends.cudnn.allow_tf32))
    except Exception:  # noqa: BLE001
        return Tf32Setting(False, True)


# PyTorch's defaults, read before anything could change them: the "eager" baseline runs with these.
EAGER_DEFAULT_TF32: Tf32Setting = _read_default_tf32()


STRICT_FP32: Tf32Setting = Tf32Setting(False, False)
ALL_TF32: Tf32Setting = Tf32Setting(True, True)


def precision_settings(strict: bool, allow_tf32: bool) -> Tuple[Tf32Setting, Tf32Setting]:
    """(candidate, eager) TF32 settings. A candidate is never held to a stricter standard than the
    baseline it is compared with: both run with PyTorch's defaults, or both strict; TF32 beyond
    eager's only when the user allows it."""
    eager = STRICT_FP32 if strict else EAGER_DEFAULT_TF32
    return (ALL_TF32 if allow_tf32 else eager), eager


@dataclass
class PrecisionGuard:
    """Holds the candidate's and eager's TF32 settings and notices when candidate code changes them."""

    candidate_setting: Tf32Setting
    eager_setting: Tf32Setting = EAGER_DEFAULT_TF32
    expected: Optional[Dict[str, str]] = None

    def enter_candidate(self) -> None:
        apply_tf32(self.candidate_setting)
        self.expected = read_precision_state()

    def enter_eager(self) -> None:
        apply_tf32(self.eager_setting)

    def changed_by_candidate(self) -> bool:
        """True when the knobs differ from what enter_candidate set; resets them either way."""
        changed = self.expected is not None and read_precision_state() != self.expected
        self.enter_candidate()
        return changed
