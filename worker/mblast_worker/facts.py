"""What depends only on the problem, worked out once and cached: the outputs' shapes, how eager
itself errs per seed, how much memory eager needs, how to compute the float64 reference within
the judge's budget, which library ops the reference calls, its FLOPs and bytes.

Computed in the worker before any candidate code is imported (so a candidate cannot have touched
it), stored in the problem cache (cachedir.py) and reused by every later candidate of the
problem. Small float64 references are stored too; large ones are recomputed per trial, in pieces.
"""

import hashlib
import math
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional

import torch

from . import WORKER_VERSION, memory
from .cachedir import CacheDir
from .checks import aliases_anything
from .compare import DiffAccumulator, OutputDiff, Tol, flat_view
from .costmodel import compute_dtype, count_flops_by_unit, flop_counter, min_bytes
from .opsrec import OpRecorder, record_ops
from .reference import (BATCH_CHUNKS, CPU, WHOLE, ReferenceModels, ReferencePlan, batch_size, iter_reference,
                        split_batch)
from .response import OutputSpec
from .tensors import (changed_state, chunk_elements, chunks, clone_all, digest, dtype_name, flat_tensors, is_dense,
                      nbytes, state_snapshot)
from .traffic import TrafficCounter, count_moved_bytes

# 7: digests of at most 8 Mi elements a chunk; 8: moved_bytes (7 was cached without it too); 9: copied_tensors
FACTS_VERSION = "9"
# Stored float64 references per seed, at most (MBLAST_REFERENCE_CACHE_MAX_MB); larger ones are
# recomputed: on the device that takes less than reading them back.
MAX_CACHED_REFERENCE_BYTES = int(os.environ.get("MBLAST_REFERENCE_CACHE_MAX_MB", "256")) * 2**20
# Parameters, inputs and outputs below this: the float64 reference is computed whole on the
# device (it needs about twice what eager needs, beside the fp32 model and tensors).
WHOLE_LIMIT_BYTES = 512 * 2**20
CHUNK_TARGET_BYTES = 1 * 2**30  # float64 work per batch slice
# A reference computed whole on the device is recomputed rather than stored when over this: float64
# work that fits the device takes less than reading the file back (about 1 GB/s from the page
# cache). Decided by size and plan, never by a measured time, so that two runs store alike.
RECOMPUTE_ON_DEVICE_OVER_BYTES = 16 * 2**20
SEPARABLE_REL = 1e-9  # float64 results of a sample alone and within a batch agree to this


@dataclass
class SeedFacts:
    seed: int
    input_digest: List[List[float]]
    eager_policy_err: float
    eager_max_abs: float
    eager_max_rel: float
    eager_rel_l2: float
    ref_abs_max: List[float]
    cached: bool


@dataclass
class ProblemFacts:
    key: str
    outputs: List[OutputSpec] = field(default_factory=list)
    # per output: whether eager's own is dense (a candidate is not flagged for eager's layout)
    dense_outputs: List[bool] = field(default_factory=list)
    input_origin: str = "host"
    plan: ReferencePlan = field(default_factory=ReferencePlan)
    ref_mutated_inputs: List[int] = field(default_factory=list)
    ref_changes_state: bool = False
    ref_output_aliases: bool = False
    ref_ops: List[str] = field(default_factory=list)
    flops: Optional[float] = None
    flops_by_unit: Dict[str, float] = field(default_factory=dict)  # costmodel.count_flops_by_unit
    min_bytes: int = 0
    moved_bytes: Optional[int] = None  # traffic.count_moved_bytes of eager's forward
    compute_dtype: str = "float32"  # costmodel.compute_dtype of the inputs and parameters
    input_bytes: int = 0
    output_bytes: int = 0
    copied_tensors: int = 0  # the input and output tensors: what a CUDA graph's replay copies
    param_bytes: int = 0  # the reference model's parameters and buffers
    eager_peak_bytes: Optional[int] = None
    eager_peak_autograd_bytes: Optional[int] = None  # the same forward recording autograd, as timed
    eager_ms: Optional[float] = None  # one eager forward, synchronized wall clock (time limits)
    seeds: Dict[str, SeedFacts] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(raw: Dict[str, Any]) -> "ProblemFacts":
        facts = ProblemFacts(**{k: v for k, v in raw.items() if k not in ("outputs", "plan", "seeds")})
        facts.outputs = [OutputSpec(**o) for o in raw.get("outputs", [])]
        facts.plan = ReferencePlan(**raw.get("plan", {}))
        facts.seeds = {k: SeedFacts(**v) for k, v in raw.get("seeds", {}).items()}
        return facts


@dataclass
class ProblemSide:
    """The trusted half of a session: everything about the problem, nothing of the candidate."""

    path: str
    source: bytes
    device: torch.device
    init_seed: int
    eager_setting: str  # "default" or "strict": eager's errors depend on it
    ref_model: torch.nn.Module
    models: ReferenceModels
    make_inputs: Callable[[int], List[Any]]
    call_eager: Callable[[List[Any], int], List[torch.Tensor]]
    input_origin: Callable[[], str]
    call_eager_recording: Optional[Callable[[List[Any], int], List[torch.Tensor]]] = None  # autograd on
    notes: List[str] = field(default_factory=list)
    seeds_computed: int = 0  # seeds whose reference prepare() computed in this process

    def key(self) -> str:
        h = hashlib.sha256()
        h.update(self.source)
        name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        torch_mm = ".".join(torch.__version__.split(".")[:2])
        h.update(f"|init={self.init_seed}|device={name}|eager={self.eager_setting}|worker={WORKER_VERSION}"
                 f"|facts={FACTS_VERSION}|torch={torch_mm}".encode())
        return h.hexdigest()[:32]


def _ref_name(key: str, seed: int) -> str:
    return f"ref-{key}-s{seed}.pt"


def eager_peak(side: ProblemSide, facts: ProblemFacts, inputs: List[Any], seed: int) -> None:
    """Device memory eager needs for one forward (model, inputs, temporaries and outputs), and the
    forward's wall time (after an earlier one warmed it up)."""
    if side.device.type != "cuda":
        t0 = time.perf_counter()
        side.call_eager(inputs, seed)
        facts.eager_ms = (time.perf_counter() - t0) * 1e3
        return
    held = sum(nbytes(t) for t in flat_tensors(inputs)) + sum(
        nbytes(t) for t in side.ref_model.state_dict().values() if isinstance(t, torch.Tensor))
    t0 = time.perf_counter()
    facts.eager_peak_bytes = held + _peak_of(side.device, lambda: side.call_eager(inputs, seed))
    facts.eager_ms = (time.perf_counter() - t0) * 1e3
    if side.call_eager_recording is not None:  # a plain call's peak: what KernelBench's timing needs
        recording = side.call_eager_recording
        facts.eager_peak_autograd_bytes = held + _peak_of(side.device, lambda: recording(inputs, seed))


def _peak_of(device: torch.device, call: Callable[[], Any]) -> int:
    """Device memory one call allocates at its peak beyond what was allocated before it (its
    outputs dropped after); synchronized on both sides."""
    torch.cuda.synchronize(device)
    memory.reset_peak(device)
    before = torch.cuda.memory_allocated(device)
    outs = call()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    del outs
    return int(peak - before)


def _separable(side: ProblemSide, inputs: List[Any], batch: int, seed: int) -> bool:
    """Whether the model treats each sample alone: sample 0 computed in float64 alone and within a
    batch of two agree (batch statistics, reductions over the batch and random masks do not)."""
    if batch < 2:
        return False
    try:
        one = side.models.run(split_batch(inputs, batch, slice(0, 1)), seed, on_cpu=False)
        two = side.models.run(split_batch(inputs, batch, slice(0, 2)), seed, on_cpu=False)
    except Exception:  # noqa: BLE001 - shapes that do not split are not separable
        return False
    for a, b in zip(one, two):
        if a.dim() == 0 or b.dim() == 0 or a.shape[0] != 1 or b.shape[0] != 2:
            return False
        x, y = a.double(), b[:1].double()
        if not torch.equal(torch.isfinite(x), torch.isfinite(y)):
            return False
        scale = float(y.abs().nan_to_num(0, 0, 0).max()) + 1e-300
        if float((x - y).abs().nan_to_num(0, 0, 0).max()) > SEPARABLE_REL * scale:
            return False
    return True


def choose_plan(side: ProblemSide, facts: ProblemFacts, inputs: List[Any], seed: int) -> ReferencePlan:
    """Within the judge's budget of 2 x eager's peak + 1 GiB, beside the fp32 reference model, the
    candidate's model, the inputs and one output: whole on the device when all of that is small;
    in batch slices when the model treats samples apart and its float64 copy fits beside the two
    fp32 models (parameters light against the data); else on the host."""
    p, i, o = facts.param_bytes, facts.input_bytes, facts.output_bytes
    # The float64 copies (2P for the model, 2I, 2O) beside the two fp32 models: within the budget's
    # gigabyte of slack when 2P + I + O is small.
    if side.device.type != "cuda" or 2 * p + i + o <= WHOLE_LIMIT_BYTES:
        return ReferencePlan(WHOLE)
    batch = batch_size(inputs)
    if 2 * p <= i + o + WHOLE_LIMIT_BYTES and _separable(side, inputs, batch, seed):
        work = 2 * (facts.eager_peak_bytes or 2 * (i + o))
        n = max(2, min(batch, math.ceil(work / CHUNK_TARGET_BYTES)))
        return ReferencePlan(BATCH_CHUNKS, chunks=n, batch=batch)
    return ReferencePlan(CPU)


def compare_streamed(outs: List[torch.Tensor], pieces: Any, tol: Tol, rel_floor: float,
                     poison: Optional[int] = None, scale_hints: Optional[List[float]] = None,
                     keep: Optional[List[List[torch.Tensor]]] = None) -> List[OutputDiff]:
    """outs against the reference as iter_reference yields it; keep, if given, receives each
    output's reference pieces (moved to the host)."""
    accs: List[DiffAccumulator] = []
    sizes: List[int] = []  # chunk sizes of the whole outputs, so that every piece is cut alike
    for i, o in enumerate(outs):
        shape = tuple(torch.view_as_real(o).shape) if o.is_complex() else tuple(o.shape)
        hint = scale_hints[i] if scale_hints else None
        accs.append(DiffAccumulator(tol, rel_floor, shape, scale_hint=hint, poison=poison))
        sizes.append(chunk_elements(math.prod(shape)))
    for sl, refs in pieces:
        for k, (acc, o, r) in enumerate(zip(accs, outs, refs)):
            c, rr = flat_view(o if sl is None else o[sl]), flat_view(r)
            for start, end in chunks(c.numel(), sizes[k]):
                acc.add(c[start:end], rr[start:end])
            if keep is not None:
                keep[k].append(r.detach().cpu())
    return [acc.result() for acc in accs]


def seed_facts(side: ProblemSide, facts: ProblemFacts, inputs: List[Any], seed: int,
               cache: Optional[CacheDir]) -> SeedFacts:
    """Eager's error against the float64 reference for one seed's inputs; stores the reference
    when it is small enough."""
    eager = side.call_eager(clone_all(inputs) if facts.ref_mutated_inputs else inputs, seed)
    size = sum(o.numel() * 8 for o in eager)
    fits = cache is not None and size <= MAX_CACHED_REFERENCE_BYTES
    if cache is not None and not fits:
        note = (f"reference not cached: {size / 2**20:.0f} MiB per seed is over the "
                f"{MAX_CACHED_REFERENCE_BYTES // 2**20} MiB limit (MBLAST_REFERENCE_CACHE_MAX_MB); recomputed per trial")
        if note not in facts.notes:
            facts.notes.append(note)
    on_device = side.device.type == "cuda" and facts.plan.mode == WHOLE
    cacheable = fits and not (on_device and size > RECOMPUTE_ON_DEVICE_OVER_BYTES)
    keep: Optional[List[List[torch.Tensor]]] = [[] for _ in eager] if cacheable else None
    diffs = compare_streamed(eager, iter_reference(side.models, facts.plan, inputs, seed), Tol(1.0, 1.0), 1e-4,
                             keep=keep)
    if cacheable and cache is not None and keep is not None:
        cache.write_tensors(_ref_name(facts.key, seed), [torch.cat(p) if len(p) > 1 else p[0] for p in keep])
    return SeedFacts(
        seed=seed, input_digest=digest(inputs),
        eager_policy_err=max((d.policy_err for d in diffs), default=0.0),
        eager_max_abs=max((d.max_abs for d in diffs), default=0.0),
        eager_max_rel=max((d.max_rel for d in diffs), default=0.0),
        eager_rel_l2=max((d.rel_l2 for d in diffs if d.ref_norm > 0), default=0.0),
        ref_abs_max=[d.ref_max for d in diffs], cached=cacheable)


def _static_facts(side: ProblemSide, facts: ProblemFacts, seed: int) -> List[Any]:
    """Facts of the first seed that do not vary by seed; returns that seed's pristine inputs."""
    inputs = side.make_inputs(seed)
    facts.input_origin = side.input_origin()
    facts.input_bytes = sum(nbytes(t) for t in flat_tensors(inputs))
    facts.param_bytes = sum(nbytes(t) for t in side.ref_model.state_dict().values() if isinstance(t, torch.Tensor))
    before = digest(inputs)
    state_before = state_snapshot(side.ref_model)
    eager = side.call_eager(inputs, seed)
    facts.outputs = [OutputSpec(list(t.shape), dtype_name(t.dtype)) for t in eager]
    facts.dense_outputs = [is_dense(t) for t in eager]
    facts.output_bytes = sum(nbytes(t) for t in eager)
    facts.copied_tensors = len(flat_tensors(inputs)) + len(eager)
    facts.ref_output_aliases = bool(aliases_anything(eager, inputs, side.ref_model))
    facts.min_bytes = min_bytes(inputs, side.ref_model, eager)
    state = [t for t in side.ref_model.state_dict().values() if isinstance(t, torch.Tensor)]
    facts.compute_dtype = compute_dtype(flat_tensors(inputs) + state)
    after = digest(inputs)
    facts.ref_mutated_inputs = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    facts.ref_changes_state = bool(changed_state(side.ref_model, state_before))
    del eager, state_before
    if facts.ref_mutated_inputs:
        inputs = side.make_inputs(seed)
    eager_peak(side, facts, inputs, seed)
    if facts.ref_mutated_inputs:
        inputs = side.make_inputs(seed)
    _dispatch_counts(facts, lambda: side.call_eager(inputs, seed))
    if facts.ref_mutated_inputs:
        inputs = side.make_inputs(seed)
    facts.plan = choose_plan(side, facts, inputs, seed)
    return inputs


def _dispatch_counts(facts: ProblemFacts, call: Callable[[], Any]) -> None:
    """The reference's ops, FLOPs and moved bytes, counted in one forward under the three modes
    stacked; where that fails, in one forward each, so that one failing count costs only its own."""
    recorder, traffic = OpRecorder(), TrafficCounter()
    flops_mode, flops_by_unit = flop_counter()
    try:
        with recorder, flops_mode, traffic:
            call()
    except Exception:  # noqa: BLE001 - counted one at a time below, each failure noted
        _dispatch_counts_apart(facts, call)
        return
    facts.ref_ops = sorted(recorder.ops)
    facts.flops_by_unit = flops_by_unit()
    facts.flops = float(sum(facts.flops_by_unit.values()))
    facts.moved_bytes = traffic.bytes


def _dispatch_counts_apart(facts: ProblemFacts, call: Callable[[], Any]) -> None:
    try:
        facts.ref_ops = sorted(record_ops(call))
    except Exception as exc:  # noqa: BLE001 - recording is best effort
        facts.notes.append(f"op recording failed: {type(exc).__name__}: {exc}")
    try:
        facts.flops_by_unit = count_flops_by_unit(call)
        facts.flops = float(sum(facts.flops_by_unit.values()))
    except Exception as exc:  # noqa: BLE001
        facts.notes.append(f"FLOP counting failed: {type(exc).__name__}: {exc}")
    try:
        facts.moved_bytes = count_moved_bytes(call)
    except Exception as exc:  # noqa: BLE001 - counting is best effort
        facts.notes.append(f"byte counting failed: {type(exc).__name__}: {exc}")


def prepare(side: ProblemSide, seeds: List[int], cache: Optional[CacheDir]) -> ProblemFacts:
    """The problem's facts for these seeds, from the cache where it has them."""
    key = side.key()
    facts_name = f"facts-{key}.json"
    raw = cache.read_json(facts_name) if cache is not None else None
    facts: Optional[ProblemFacts] = None
    if isinstance(raw, dict):
        try:
            facts = ProblemFacts.from_json(raw)
        except (TypeError, ValueError):
            facts = None
    missing = [s for s in seeds if facts is None or str(s) not in facts.seeds]
    if facts is not None and not missing:
        return facts
    first_inputs: Optional[List[Any]] = None
    if facts is None:
        facts = ProblemFacts(key=key)
        first_inputs = _static_facts(side, facts, seeds[0])
    for s in missing:
        inputs = first_inputs if first_inputs is not None and s == seeds[0] else side.make_inputs(s)
        facts.seeds[str(s)] = seed_facts(side, facts, inputs, s, cache)
        side.seeds_computed += 1
        del inputs
        first_inputs = None
    facts.plan.precision = side.models.precision
    if cache is not None:
        cache.write_json(facts_name, facts.to_json())
    return facts


def load_references(facts: ProblemFacts, seeds: List[int], cache: Optional[CacheDir]) -> Dict[int, List[torch.Tensor]]:
    """The stored float64 references of these seeds (on the host), read before candidate code runs."""
    found: Dict[int, List[torch.Tensor]] = {}
    if cache is None:
        return found
    for s in seeds:
        sf = facts.seeds.get(str(s))
        if sf is not None and sf.cached:
            tensors = cache.read_tensors(_ref_name(facts.key, s))
            if tensors is not None and len(tensors) == len(facts.outputs):
                found[s] = tensors
    return found
