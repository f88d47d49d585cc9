"""One evaluation's state: the loaded problem and candidate, both models, and the guarded
ways of calling them."""

import copy
import random
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Dict, List, Optional, Set, cast

import torch

from . import guards
from .errors import CandidateLoadError, CandidateRuntimeError, TaskError
from .guards import NamespaceSnapshot, PrecisionGuard, Tf32Setting
from .loader import (Candidate, Problem, call_input_fn, construct, copy_matching_state, describe, load_candidate,
                     load_problem)
from .outputs import kind_error, output_list
from .phases import Phases
from .poison import Poisoner, PoisonMode
from .reference import ReferenceStore
from .request import Request
from .response import Response
from .tensors import changed_state, state_snapshot, to_device


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass


@dataclass
class Session:
    req: Request
    resp: Response
    device: torch.device
    problem: Problem
    candidate: Candidate
    init_inputs: List[Any]
    ref_model: torch.nn.Module
    cand_model: torch.nn.Module
    refs: ReferenceStore
    precision: PrecisionGuard
    namespaces: NamespaceSnapshot
    poisoner: Poisoner
    cand_state: Dict[str, torch.Tensor]
    ref_state: Dict[str, torch.Tensor]
    param_names: Set[str]
    phases: Phases = field(default_factory=Phases)
    inputs_on_device: Optional[bool] = None  # None: not tried yet (see make_inputs)
    cand_changed_state: Set[str] = field(default_factory=set)
    ref_changed_state: Set[str] = field(default_factory=set)

    # ---- setup -------------------------------------------------------------------------

    @staticmethod
    def open(req: Request, resp: Response, device: torch.device, phases: Optional[Phases] = None) -> "Session":
        assert req.problem is not None and req.candidate is not None
        problem = load_problem(req.problem)
        seed_everything(req.init_seed)
        init_inputs = call_input_fn(problem, "get_init_inputs")
        namespaces = NamespaceSnapshot.take()  # after the (trusted) problem, before the candidate
        precision = PrecisionGuard(Tf32Setting(req.allow_tf32, req.allow_tf32))
        precision.enter_candidate()
        candidate = load_candidate(req.candidate)
        if precision.changed_by_candidate() and not req.allow_tf32:
            resp.add_flag("precision_drop")
            resp.add_note("candidate changed TF32 / matmul precision settings at import")
        _record_patches(resp, namespaces, "at import")

        def build_ref() -> torch.nn.Module:
            return construct(problem.model_cls, copy.deepcopy(init_inputs), req.init_seed, device, problem.path, TaskError)

        ref_model = build_ref()
        cand_model = construct(candidate.model_cls, copy.deepcopy(init_inputs), req.init_seed, device,
                               candidate.path, CandidateLoadError)
        copy_matching_state(ref_model, cand_model)
        phases = phases or Phases()
        refs = ReferenceStore(problem.path, problem.source, req.init_seed, device, req.cache_dir,
                              build_model=_copier(ref_model, build_ref), restore_tf32=precision.enter_candidate,
                              phases=phases)
        if candidate.is_reference:
            resp.add_flag("reference_as_candidate")
        return Session(
            req=req, resp=resp, device=device, problem=problem, candidate=candidate, init_inputs=init_inputs,
            ref_model=ref_model, cand_model=cand_model, refs=refs, precision=precision, namespaces=namespaces,
            poisoner=Poisoner(device), cand_state=state_snapshot(cand_model), ref_state=state_snapshot(ref_model),
            param_names={n for n, _ in cand_model.named_parameters()}, phases=phases,
        )

    # ---- inputs ------------------------------------------------------------------------

    def make_inputs(self, seed: int) -> List[Any]:
        """get_inputs() under seed, on the device.

        On CUDA with torch >= 2.0 the inputs are generated on the device directly (get_inputs()
        runs inside `with torch.device(...)`), which for large inputs is much faster than
        generating them on the CPU and copying. The values then differ from CPU generation but
        are still determined by the seed (torch.manual_seed seeds the device's generator too),
        and the reference cache keys them apart (ReferenceStore.input_origin). A get_inputs()
        that fails that way (one that mixes in CPU generators or NumPy, say) is run on the CPU
        instead, for the rest of the session."""
        with self.phases.phase("inputs"):
            context = _device_context(self.device) if self.inputs_on_device is not False else None
            if context is not None:
                seed_everything(seed)
                try:
                    with context:
                        values = call_input_fn(self.problem, "get_inputs")
                    self.inputs_on_device = True
                    self.refs.input_origin = "device"
                    return to_device(values, self.device)
                except TaskError as exc:
                    self.inputs_on_device = False
                    self.refs.input_origin = "host"
                    self.resp.add_note(f"get_inputs() failed on the device ({exc.message.splitlines()[0]}); "
                                       "inputs are generated on the CPU and copied")
            seed_everything(seed)
            return to_device(call_input_fn(self.problem, "get_inputs"), self.device)

    # ---- calls -------------------------------------------------------------------------

    def call_candidate(self, inputs: List[Any], seed: int, poison: Optional[PoisonMode]) -> Any:
        """One guarded forward of the candidate; returns its raw result."""
        if poison is not None:
            with self.phases.phase("poison"):
                self.poisoner.poison(poison)
        with self.phases.phase("candidate"):
            return self._call_candidate(inputs, seed)

    def _call_candidate(self, inputs: List[Any], seed: int) -> Any:
        self.precision.enter_candidate()
        seed_everything(seed)
        try:
            with torch.no_grad():
                result = self.cand_model(*inputs)
            if self.device.type == "cuda":
                guards.cuda_synchronize(self.device)  # surfaces asynchronous kernel errors here
        except (Exception, SystemExit) as exc:
            raise CandidateRuntimeError(f"{self.candidate.path}: forward raised {describe(exc)}",
                                        traceback.format_exc()) from None
        finally:
            self.after_candidate_code()
        changed = set(changed_state(self.cand_model, self.cand_state))
        self.cand_changed_state |= changed
        return result

    def after_candidate_code(self, where: str = "in forward") -> None:
        if self.precision.changed_by_candidate() and not self.req.allow_tf32:
            self.resp.add_flag("precision_drop")
            self.resp.add_note(f"candidate changed TF32 / matmul precision settings {where}")
        _record_patches(self.resp, self.namespaces, where)

    def call_eager(self, inputs: List[Any], seed: int) -> List[torch.Tensor]:
        """The fp32 reference with PyTorch's default settings; validates what it returns."""
        with self.phases.phase("eager"):
            return self._call_eager(inputs, seed)

    def _call_eager(self, inputs: List[Any], seed: int) -> List[torch.Tensor]:
        self.precision.enter_eager()
        seed_everything(seed)
        try:
            with torch.no_grad():
                raw = self.ref_model(*inputs)
        except (Exception, SystemExit) as exc:
            raise TaskError(f"{self.problem.path}: Model.forward raised {describe(exc)}", traceback.format_exc()) from None
        finally:
            self.precision.enter_candidate()
        outs = output_list(raw)
        if outs is None:
            raise TaskError(f"{self.problem.path}: {kind_error(raw)}")
        bad = [o for o in outs if not isinstance(o, torch.Tensor)]
        if bad:
            raise TaskError(f"{self.problem.path}: forward returned a tuple holding {type(bad[0]).__name__}, expected tensors")
        self.ref_changed_state |= set(changed_state(self.ref_model, self.ref_state))
        return outs

    def eager_callable(self, inputs: List[Any]) -> Any:
        def run() -> Any:
            with torch.no_grad():
                return self.ref_model(*inputs)

        return run

    def candidate_callable(self, inputs: List[Any]) -> Any:
        def run() -> Any:
            with torch.no_grad():
                return self.cand_model(*inputs)

        return run

    def state_mutation_flagged(self) -> bool:
        """Parameters must never change; buffers only where the reference changes its own too
        (BatchNorm running statistics in training mode)."""
        params = self.cand_changed_state & self.param_names
        buffers = self.cand_changed_state - self.param_names
        return bool(params) or (bool(buffers) and not self.ref_changed_state)


def _device_context(device: torch.device) -> Optional[ContextManager[Any]]:
    """The device as a default-device context manager where torch has one (>= 2.0), for CUDA only."""
    if device.type != "cuda" or not hasattr(device, "__enter__"):
        return None
    return cast(ContextManager[Any], device)


def _copier(model: torch.nn.Module, rebuild: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    """Fresh copies of the model as constructed (before any forward); rebuilds if it cannot be copied."""
    try:
        pristine = copy.deepcopy(model)
    except Exception:  # noqa: BLE001
        return rebuild
    return lambda: copy.deepcopy(pristine)


def _record_patches(resp: Response, namespaces: NamespaceSnapshot, where: str) -> None:
    report = namespaces.check_and_restore()
    if report.timer:
        resp.add_flag("timer_patched")
        resp.add_note(f"candidate replaced {', '.join(sorted(set(report.timer)))} {where} (restored)")
    if report.torch:
        resp.add_flag("torch_patched")
        resp.add_note(f"candidate replaced {', '.join(sorted(set(report.torch)))} {where} (restored)")
