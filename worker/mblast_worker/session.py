"""One evaluation's state: the problem side (loaded, prepared and cached before any candidate code
exists in the process), then the candidate, both models, and the guarded ways of calling them."""

import copy
import random
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Dict, List, Optional, Set, cast

import torch

from . import guards, progress
from .cachedir import CacheDir
from .errors import CandidateLoadError, CandidateRuntimeError, TaskError
from .facts import ProblemFacts, ProblemSide, load_references, prepare
from .guards import NamespaceSnapshot, PrecisionGuard, precision_settings
from .loader import (Candidate, Problem, call_input_fn, construct, copy_matching_state, describe, load_candidate,
                     load_problem)
from .memory import release_cached_blocks
from .outputs import kind_error, output_list
from .phases import Phases
from .poison import Poisoner, PoisonMode
from .reference import ReferenceModels, pristine_copier
from .request import Request
from .response import OutputSpec, Response
from .tensors import changed_state, detached, state_snapshot, to_device


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass


@dataclass
class Inputs:
    """get_inputs() under a seed, on the device. On CUDA with torch >= 2.0 they are generated on
    the device (get_inputs() inside `with torch.device(...)`), much faster than on the CPU for
    large inputs; the values then differ from CPU generation but are still determined by the seed.
    A get_inputs() that fails that way (one that mixes in NumPy, say) runs on the CPU instead."""

    problem: Problem
    device: torch.device
    phases: Phases
    origin: Optional[str] = None  # "device" | "host"; None: not tried yet
    notes: List[str] = field(default_factory=list)

    def make(self, seed: int) -> List[Any]:
        with self.phases.phase("inputs"):
            context = _device_context(self.device) if self.origin != "host" else None
            if context is not None:
                seed_everything(seed)
                try:
                    with context:
                        values = call_input_fn(self.problem, "get_inputs")
                    self.origin = "device"
                    return to_device(values, self.device)
                except TaskError as exc:
                    self.notes.append(f"get_inputs() failed on the device ({exc.message.splitlines()[0]}); "
                                      "inputs are generated on the CPU and copied")
            self.origin = "host"
            seed_everything(seed)
            return to_device(call_input_fn(self.problem, "get_inputs"), self.device)


@dataclass
class PreparedProblem:
    """A problem's side of an evaluation: loaded, its facts and float64 references read from the
    cache (or computed and stored) before any candidate code exists in the process."""

    req: Request
    resp: Response
    device: torch.device
    phases: Phases
    problem: Problem
    init_inputs: List[Any]
    precision: PrecisionGuard
    ref_model: torch.nn.Module
    side: ProblemSide
    facts: ProblemFacts
    references: Dict[int, List[torch.Tensor]]
    inputs: "Inputs"

    @staticmethod
    def open(req: Request, resp: Response, device: torch.device, phases: Phases,
             cache: Optional[CacheDir]) -> "PreparedProblem":
        assert req.problem is not None and req.candidate is not None
        problem = load_problem(req.problem)
        seed_everything(req.init_seed)
        init_inputs = call_input_fn(problem, "get_init_inputs")
        cand_setting, eager_setting = precision_settings(req.tolerance_policy == "strict", req.allow_tf32)
        precision = PrecisionGuard(cand_setting, eager_setting)

        def build_ref() -> torch.nn.Module:
            return construct(problem.model_cls, copy.deepcopy(init_inputs), req.init_seed, device, problem.path, TaskError)

        ref_model = build_ref()
        inputs = Inputs(problem, device, phases)
        side = _problem_side(req, device, problem, ref_model, build_ref, precision, inputs)
        with phases.phase("prepare"):
            facts = prepare(side, req.seeds, cache)
            references = load_references(facts, req.seeds, cache)
        inputs.origin = facts.input_origin
        side.models.release()  # rebuilt only if a trial must compute a reference again
        _release_device_memory(device)
        return PreparedProblem(req=req, resp=resp, device=device, phases=phases, problem=problem,
                               init_inputs=init_inputs, precision=precision, ref_model=ref_model, side=side,
                               facts=facts, references=references, inputs=inputs)

    def held_bytes(self) -> int:
        """What it keeps while other problems are judged: its references and the reference model."""
        tensors = [t for ts in self.references.values() for t in ts]
        tensors += list(self.ref_model.parameters()) + list(self.ref_model.buffers())
        return sum(t.numel() * t.element_size() for t in tensors)


def close_cache(cache: Optional[CacheDir], resp: Response) -> None:
    """Before candidate code: it must never reach the cache."""
    if cache is not None:
        resp.notes.extend(cache.errors)
        cache.close()


def import_candidate(prepared: PreparedProblem, namespaces: NamespaceSnapshot) -> Candidate:
    """The candidate's module, imported once; what its import changed is flagged on prepared's response."""
    req, resp, precision = prepared.req, prepared.resp, prepared.precision
    assert req.candidate is not None
    precision.enter_candidate()
    candidate = load_candidate(req.candidate)
    if precision.changed_by_candidate() and not req.allow_tf32:
        resp.add_flag("precision_drop")
        resp.add_note("candidate changed TF32 / matmul precision settings at import")
    _record_patches(resp, namespaces, "at import")
    return candidate


@dataclass
class Session:
    req: Request
    resp: Response
    device: torch.device
    problem: Problem
    side: ProblemSide
    facts: ProblemFacts
    references: Dict[int, List[torch.Tensor]]  # the stored float64 references, by seed (host)
    candidate: Candidate
    init_inputs: List[Any]
    ref_model: torch.nn.Module
    cand_model: torch.nn.Module
    precision: PrecisionGuard
    namespaces: NamespaceSnapshot
    poisoner: Poisoner
    inputs: Inputs
    cand_state: Dict[str, List[List[float]]]
    param_names: Set[str]
    phases: Phases = field(default_factory=Phases)
    cand_changed_state: Set[str] = field(default_factory=set)
    reference_computations: int = 0  # float64 references computed in this request

    # ---- setup -------------------------------------------------------------------------

    @staticmethod
    def open(req: Request, resp: Response, device: torch.device, phases: Optional[Phases] = None) -> "Session":
        phases = phases or Phases()
        cache = CacheDir.open(req.cache_dir)
        try:
            prepared = PreparedProblem.open(req, resp, device, phases, cache)
        finally:
            close_cache(cache, resp)
        progress.report("prepared", eager_ms=prepared.facts.eager_ms)
        namespaces = NamespaceSnapshot.take()  # after the (trusted) problem, before the candidate
        candidate = import_candidate(prepared, namespaces)
        return Session.attach(prepared, candidate, namespaces)

    @staticmethod
    def attach(prepared: "PreparedProblem", candidate: Candidate, namespaces: NamespaceSnapshot) -> "Session":
        """The candidate's model for a prepared problem: the candidate module may already have been
        judged on another problem (a SOL-ExecBench problem's workloads, judged in one process)."""
        req, resp, device, facts = prepared.req, prepared.resp, prepared.device, prepared.facts
        cand_model = construct(candidate.model_cls, copy.deepcopy(prepared.init_inputs), req.init_seed, device,
                               candidate.path, CandidateLoadError)
        copy_matching_state(prepared.ref_model, cand_model)
        if candidate.is_reference:
            _check_reference_on_purpose(candidate.path, prepared.problem.source)
            resp.add_flag("reference_as_candidate")
        poisoner = Poisoner(device, fresh_bytes=_poison_block_bytes(facts),
                            budget_bytes=2 * facts.eager_peak_bytes + (1 << 30) if facts.eager_peak_bytes else None,
                            expected_nbytes=[_spec_bytes(o) for o in facts.outputs])
        return Session(
            req=req, resp=resp, device=device, problem=prepared.problem, side=prepared.side, facts=facts,
            references=prepared.references, candidate=candidate, init_inputs=prepared.init_inputs,
            ref_model=prepared.ref_model, cand_model=cand_model, precision=prepared.precision, namespaces=namespaces,
            poisoner=poisoner, inputs=prepared.inputs, cand_state=state_snapshot(cand_model),
            param_names={n for n, _ in cand_model.named_parameters()}, phases=prepared.phases,
            reference_computations=prepared.side.seeds_computed,
        )

    # ---- inputs ------------------------------------------------------------------------

    def make_inputs(self, seed: int) -> List[Any]:
        return self.inputs.make(seed)

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
            with torch.set_grad_enabled(self.candidate_grad):
                result = detached(self.cand_model(*inputs))
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

    @property
    def candidate_grad(self) -> bool:
        """The grad mode of every call of the candidate: the one it is timed in. A compiled module
        verified under no_grad and timed recording autograd compiles twice, and the second graph
        ran 0.46-0.52 ms against 0.36-0.40 ms compiled alone (level1/40 on the H200)."""
        return self.req.timing is not None and self.req.timing.autograd

    def after_candidate_code(self, where: str = "in forward") -> None:
        if self.precision.changed_by_candidate() and not self.req.allow_tf32:
            self.resp.add_flag("precision_drop")
            self.resp.add_note(f"candidate changed TF32 / matmul precision settings {where}")
        _record_patches(self.resp, self.namespaces, where)

    def call_eager(self, inputs: List[Any], seed: int) -> List[torch.Tensor]:
        """The fp32 reference with eager's settings; validates what it returns."""
        with self.phases.phase("eager"):
            return _call_model(self.ref_model, self.problem.path, self.precision, inputs, seed)

    def eager_callable(self, inputs: List[Any], autograd: bool = False) -> Any:
        def run() -> Any:
            with torch.set_grad_enabled(autograd):
                return self.ref_model(*inputs)

        return run

    def candidate_callable(self, inputs: List[Any], autograd: bool = False) -> Any:
        def run() -> Any:
            with torch.set_grad_enabled(autograd):
                return self.cand_model(*inputs)

        return run

    def state_mutation_flagged(self) -> bool:
        """Parameters must never change; buffers only where the reference changes its own too
        (BatchNorm running statistics in training mode)."""
        params = self.cand_changed_state & self.param_names
        buffers = self.cand_changed_state - self.param_names
        return bool(params) or (bool(buffers) and not self.facts.ref_changes_state)


def _problem_side(req: Request, device: torch.device, problem: Problem, ref_model: torch.nn.Module,
                  build_ref: Callable[[], torch.nn.Module], precision: PrecisionGuard, inputs: Inputs) -> ProblemSide:
    notes: List[str] = []
    models = ReferenceModels(problem.path, pristine_copier(ref_model, build_ref), precision.enter_candidate, device,
                             notes=notes)
    return ProblemSide(
        path=problem.path, source=problem.source, device=device, init_seed=req.init_seed,
        eager_setting="strict" if req.tolerance_policy == "strict" else "default", ref_model=ref_model,
        models=models, make_inputs=inputs.make,
        call_eager=lambda xs, seed: _call_model(ref_model, problem.path, precision, xs, seed),
        call_eager_recording=lambda xs, seed: _call_model(ref_model, problem.path, precision, xs, seed, autograd=True),
        input_origin=lambda: inputs.origin or "host", notes=notes)


def _call_model(model: torch.nn.Module, path: str, precision: PrecisionGuard, inputs: List[Any],
                seed: int, autograd: bool = False) -> List[torch.Tensor]:
    precision.enter_eager()
    seed_everything(seed)
    try:
        with torch.set_grad_enabled(autograd):
            raw = model(*inputs)
    except (Exception, SystemExit) as exc:
        raise TaskError(f"{path}: Model.forward raised {describe(exc)}", traceback.format_exc()) from None
    finally:
        precision.enter_candidate()
    outs = output_list(raw)
    if outs is None:
        raise TaskError(f"{path}: {kind_error(raw)}")
    bad = [o for o in outs if not isinstance(o, torch.Tensor)]
    if bad:
        raise TaskError(f"{path}: forward returned a tuple holding {type(bad[0]).__name__}, expected tensors")
    return outs


def _spec_bytes(spec: OutputSpec) -> int:
    n = 1
    for d in spec.shape:
        n *= d
    return n * torch.empty((), dtype=getattr(torch, spec.dtype)).element_size()


def _poison_block_bytes(facts: ProblemFacts) -> int:
    """The fresh block poisoned before each candidate call, the size of its outputs (the poisoner
    keeps it within the budget), so that their allocation lands in poison."""
    return int(max(64 << 20, facts.output_bytes))


def _release_device_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    release_cached_blocks(device)


def _device_context(device: torch.device) -> Optional[ContextManager[Any]]:
    """The device as a default-device context manager where torch has one (>= 2.0), for CUDA only."""
    if device.type != "cuda" or not hasattr(device, "__enter__"):
        return None
    return cast(ContextManager[Any], device)


def _record_patches(resp: Response, namespaces: NamespaceSnapshot, where: str) -> None:
    report = namespaces.check_and_restore()
    if report.timer:
        resp.add_flag("timer_patched")
        resp.add_note(f"candidate replaced {', '.join(sorted(set(report.timer)))} {where} (restored)")
    if report.torch:
        resp.add_flag("torch_patched")
        resp.add_note(f"candidate replaced {', '.join(sorted(set(report.torch)))} {where} (restored)")


def _check_reference_on_purpose(path: str, problem_source: bytes) -> None:
    """A file without ModelNew is judged through its Model only when it is the problem itself (a
    problem checked against itself); anything else forgot to define ModelNew."""
    with open(path, "rb") as fh:
        if fh.read() == problem_source:
            return
    raise CandidateLoadError(f"{path}: no class ModelNew (it defines Model, which is judged only when the "
                             "candidate is the problem file itself); name the candidate's class ModelNew")
