"""Interleaved timing of the reference, the candidate and optionally torch.compile.

ABAB... in one process (order reversed every other round), rotating among several
input sets drawn from fresh seeds, caches flushed before every call.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import torch

from .compare import Tol
from .errors import CandidateRuntimeError
from .loader import describe
from .request import TimingConfig
from .session import Session
from .tensors import clone_all
from .timing import Measurement, hides_device_work, make_timer, summarize
from .verify import matches

TIMING_SEED_BASE: int = 1_000_003


@dataclass
class Contender:
    name: str
    make_call: Callable[[List[Any]], Callable[[], Any]]
    before: Callable[[], None]
    after: Callable[[], None]
    calls: List[Callable[[], Any]] = field(default_factory=list)
    buffers: List[List[Any]] = field(default_factory=list)
    ms: List[float] = field(default_factory=list)
    wall_ms: List[float] = field(default_factory=list)
    last: Dict[int, Any] = field(default_factory=dict)


@dataclass
class TimedResult:
    cand_buffers: List[Any]


def _compiled_contender(s: Session, sample: List[Any]) -> Optional[Contender]:
    if not hasattr(torch, "compile"):
        s.resp.add_note(f"compile baseline skipped: torch {torch.__version__} has no torch.compile")
        return None
    try:
        compiled = torch.compile(s.refs.build_model())
        with torch.no_grad():
            compiled(*clone_all(sample))  # compiles outside the timed region
    except Exception as exc:  # noqa: BLE001
        s.resp.add_note(f"compile baseline skipped: {describe(exc)}")
        return None

    def make(inputs: List[Any]) -> Callable[[], Any]:
        def run() -> Any:
            with torch.no_grad():
                return compiled(*inputs)

        return run

    return Contender("compile", make, s.precision.enter_eager, s.precision.enter_candidate)


def run_timing(s: Session, tol: Tol, rel_l2_limit: float, cfg: TimingConfig) -> TimedResult:
    pristine = [s.make_inputs(TIMING_SEED_BASE + k) for k in range(cfg.input_sets)]
    contenders = [
        Contender("ref", s.eager_callable, s.precision.enter_eager, s.precision.enter_candidate),
        Contender("cand", s.candidate_callable, s.precision.enter_candidate, s.after_candidate_code),
    ]
    if "compile" in s.req.baselines:
        compiled = _compiled_contender(s, pristine[0])
        if compiled is not None:
            contenders.append(compiled)
    for c in contenders:
        c.buffers = [clone_all(p) for p in pristine]
        c.calls = [c.make_call(b) for b in c.buffers]
    timer = make_timer(s.device, cfg.l2_flush)

    def measure(c: Contender, k: int) -> Measurement:
        c.before()
        try:
            m = timer.measure(c.calls[k])
        except (Exception, SystemExit) as exc:
            if c.name == "cand":
                raise CandidateRuntimeError(f"{s.candidate.path}: forward raised {describe(exc)} while timed") from None
            raise
        finally:
            c.after()
        # Every contender keeps its last output per input set until its next call on that set,
        # so that all of them allocate and free alike: a contender whose output is freed at once
        # meets a different allocator state (glibc's mmap threshold on the CPU) than one whose
        # output is kept, which once made an identical candidate time 2x apart from the reference.
        c.last[k] = m.result
        return m

    for w in range(cfg.warmup):
        for c in contenders:
            measure(c, w % cfg.input_sets)
    for i in range(cfg.runs):
        k = i % cfg.input_sets
        for c in contenders if i % 2 == 0 else contenders[::-1]:
            m = measure(c, k)
            c.ms.append(m.ms)
            c.wall_ms.append(m.wall_ms)

    stats = {c.name: summarize(c.ms) for c in contenders}
    s.resp.timing = stats
    s.resp.ref_ms = stats["ref"].median_ms
    s.resp.cand_ms = stats["cand"].median_ms
    s.resp.speedup = s.resp.ref_ms / s.resp.cand_ms if s.resp.cand_ms > 0 else None
    if "compile" in stats:
        s.resp.compile_ms = stats["compile"].median_ms
        s.resp.speedup_vs_compile = s.resp.compile_ms / s.resp.cand_ms if s.resp.cand_ms > 0 else None

    by_name = {c.name: c for c in contenders}
    if s.device.type == "cuda":
        ref_c, cand_c = by_name["ref"], by_name["cand"]
        if hides_device_work(cand_c.wall_ms, cand_c.ms) and not hides_device_work(ref_c.wall_ms, ref_c.ms):
            s.resp.add_flag("side_stream")
            s.resp.add_note(
                f"candidate wall time with device sync {sum(cand_c.wall_ms):.4g} ms vs events {sum(cand_c.ms):.4g} ms")

    stale_sets = [k for k, raw in sorted(by_name["cand"].last.items())
                  if not matches(raw, s.refs.get(TIMING_SEED_BASE + k, pristine[k]).outputs, tol, s.req.atol, rel_l2_limit)]
    if stale_sets:
        s.resp.add_flag("result_cache")
        s.resp.add_note(f"the last timed call's output is wrong for input set(s) {stale_sets}")
    return TimedResult(cand_buffers=by_name["cand"].buffers[0])
