"""Interleaved timing of the reference, the candidate and optionally torch.compile.

ABAB... in one process (order reversed every other round), the L2 flushed before every call as
KernelBench's harness does it, after the GPU has been brought to its working clocks. Small inputs
rotate among several input sets drawn from fresh seeds; inputs larger than the L2 many times over
use one set, shared by every contender (no contender changes its inputs: that was checked in the
trials), so that timing never holds more than one copy of them.
"""

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import guards
from .compare import Tol, against_eager
from .errors import CandidateRuntimeError
from .loader import describe
from .request import TimingConfig
from .session import Session
from .tensors import clone_all, copy_values_into, detached, drop_state_history
from .timing import Measurement, hides_device_work, make_timer, median_uncertainty, spin_up, summarize
from .verify import matches

TIMING_SEED_BASE: int = 1_000_003
ONE_SET_INPUT_BYTES: int = 64 << 20  # inputs beyond this use one input set
WARMUP_S: float = 0.05  # warm-up calls per contender last at least this long (and cfg.warmup calls)
RUNS_BUDGET_S: float = 0.4  # timed runs per contender are capped to about this much time...
MIN_RUNS: int = 20  # ...but never fewer than this (or cfg.runs, if smaller)
# Timing ends before the run count once every contender's median is known within this (95 %
# confidence, relative; timing.median_uncertainty): quiet GPU kernels settle in a few dozen runs,
# and the runs beyond are most of a step's time on small problems.
SETTLED_MEDIAN: float = 0.005
# After the timed rounds, reference and candidate are called once on each of a few input sets
# never seen before: a candidate that remembers answers by the inputs' exact contents (which the
# staleness checks cannot tell from computing them) is fast only on inputs it has seen.
FRESH_SEED_BASE: int = 2_000_003
FRESH_SETS: int = 5
MEMO_SLOWDOWN: float = 2.0  # fresh vs repeated, beyond the reference's own ratio
MEMO_MIN_GAIN: float = 1.2  # only a candidate claiming at least this speedup is probed...
MEMO_MIN_EXTRA_MS: float = 0.02  # ...and flagged only when new inputs cost it this much more
KEEP_LAST_BYTES: int = 512 << 20  # the candidate's last outputs kept for their check beyond this: one set


@dataclass
class Contender:
    name: str
    make_call: Callable[[List[Any]], Callable[[], Any]]
    before: Callable[[], None]
    after: Callable[[], None]
    keep_last: bool
    model: Optional[torch.nn.Module] = None  # whose state loses its autograd history after each call
    calls: List[Callable[[], Any]] = field(default_factory=list)
    ms: List[float] = field(default_factory=list)
    hidden_ms: List[float] = field(default_factory=list)
    last: Dict[int, Any] = field(default_factory=dict)


@dataclass
class TimedResult:
    cand_buffers: List[Any]


def _compiled_contender(s: Session, sample: List[Any], keep_last: bool, autograd: bool) -> Optional[Contender]:
    if not hasattr(torch, "compile"):
        s.resp.add_note(f"compile baseline skipped: torch {torch.__version__} has no torch.compile")
        return None
    try:
        compiled = torch.compile(s.side.models.pristine())
        with torch.set_grad_enabled(autograd):
            compiled(*clone_all(sample))  # compiles outside the timed region, in the timed grad mode
    except Exception as exc:  # noqa: BLE001
        s.resp.add_note(f"compile baseline skipped: {describe(exc)}")
        return None

    def make(inputs: List[Any]) -> Callable[[], Any]:
        def run() -> Any:
            with torch.set_grad_enabled(autograd):
                return compiled(*inputs)

        return run

    return Contender("compile", make, s.precision.enter_eager, s.precision.enter_candidate, keep_last, compiled)


def input_sets(s: Session, cfg: TimingConfig) -> int:
    return 1 if s.facts.input_bytes > ONE_SET_INPUT_BYTES else cfg.input_sets


def run_timing(s: Session, tol: Tol, rel_l2_limit: float, eager_err: float, cfg: TimingConfig) -> TimedResult:
    pristine = [s.make_inputs(TIMING_SEED_BASE + k) for k in range(input_sets(s, cfg))]
    # On the CPU every contender keeps its last output per input set until its next call on that
    # set, so that all of them allocate and free alike (glibc's mmap threshold once made an
    # identical candidate time 2x apart from the reference). On the GPU none does: memory stays
    # at one output, and the caching allocator serves every call alike.
    keep_all = s.device.type != "cuda"
    contenders = [
        Contender("ref", lambda xs: s.eager_callable(xs, cfg.autograd), s.precision.enter_eager,
                  s.precision.enter_candidate, keep_all, s.ref_model),
        Contender("cand", lambda xs: s.candidate_callable(xs, cfg.autograd), s.precision.enter_candidate,
                  s.after_candidate_code, keep_all, s.cand_model),
    ]
    if "compile" in s.req.baselines:
        compiled = _compiled_contender(s, pristine[0], keep_all, cfg.autograd)
        if compiled is not None:
            contenders.append(compiled)
    shared = not s.facts.ref_mutated_inputs
    for c in contenders:
        c.calls = [c.make_call(p if shared else clone_all(p)) for p in pristine]
    timer = make_timer(s.device, cfg.l2_flush)

    last_round = [False]

    def measure(c: Contender, k: int) -> Measurement:
        # Every contender's output is dropped before its next call, so that each call meets the
        # allocator in the same state; on the CPU all keep theirs (keep_last), and the candidate
        # keeps the outputs of the last round, to be checked.
        c.last.pop(k, None)
        m = _timed_call(s, c, timer, c.calls[k], "while timed")
        if c.keep_last or (c.name == "cand" and last_round[0]):
            c.last[k] = detached(m.result)  # kept for the check, without the recorded graph
        m.result = None
        return m

    n_sets = len(pristine)
    # The candidate's last output of each input set is checked after timing; when holding them
    # all would cost more than the budget's slack, only the very last call's is kept.
    checked_sets = n_sets if s.device.type != "cuda" or n_sets * s.facts.output_bytes <= KEEP_LAST_BYTES else 1
    with s.phases.phase("spin_up"):
        spin_up(s.device)
    runs = _warm_up(contenders, measure, n_sets, cfg)
    timed_rounds(contenders, measure, runs, n_sets, checked_sets, last_round)
    _report(s, contenders)
    by_name = {c.name: c for c in contenders}
    # Before the probe, which writes new values into these buffers.
    _check_last_outputs(s, by_name["cand"], pristine, against_eager(tol, eager_err), rel_l2_limit, shared)
    with s.phases.phase("fresh_inputs"):
        _fresh_input_probe(s, by_name["ref"], by_name["cand"], timer, pristine if shared else None)
    return TimedResult(cand_buffers=pristine[0])


def _warm_up(contenders: List[Contender], measure: Callable[[Contender, int], Measurement], n_sets: int,
             cfg: TimingConfig) -> int:
    """Warm-up calls (at least cfg.warmup, and WARMUP_S of them per contender); returns how many
    timed runs fit RUNS_BUDGET_S by the warm-up's times, within [min(MIN_RUNS, cfg.runs), cfg.runs]."""
    spent: Dict[str, float] = {c.name: 0.0 for c in contenders}
    last_ms: Dict[str, float] = {c.name: 0.0 for c in contenders}
    w = 0
    while w < cfg.warmup or (cfg.warmup > 0 and min(spent.values()) < WARMUP_S and w < 1000):
        for c in contenders:
            t0 = time.perf_counter()
            m = measure(c, w % n_sets)
            spent[c.name] += time.perf_counter() - t0
            last_ms[c.name] = m.ms
        w += 1
    slowest = max(last_ms.values()) / 1e3
    if slowest <= 0:
        return cfg.runs
    fit = int(RUNS_BUDGET_S / slowest)
    return max(min(MIN_RUNS, cfg.runs), min(cfg.runs, fit))


def timed_rounds(contenders: List[Contender], measure: Callable[[Contender, int], Measurement], runs: int,
                 n_sets: int, checked_sets: int, last_round: List[bool]) -> int:
    """Rounds of one timed call per contender, the order reversed every other round and the input
    set rotating; at most `runs` of them, fewer once every median has settled (SETTLED_MEDIAN,
    judged after MIN_RUNS rounds, at whole turns of the input sets). The last `checked_sets`
    rounds are flagged in last_round[0] (the candidate keeps their outputs); returns the rounds run."""
    i = 0
    while i < runs:
        k = i % n_sets
        last_round[0] = i >= runs - checked_sets
        for c in contenders if i % 2 == 0 else contenders[::-1]:
            m = measure(c, k)
            c.ms.append(m.ms)
            c.hidden_ms.append(m.hidden_ms)
        i += 1
        if i >= MIN_RUNS and i % n_sets == 0 and i + checked_sets < runs and _settled(contenders):
            runs = i + checked_sets  # the last rounds, whose outputs are checked, still to come
    return runs


def _settled(contenders: List[Contender]) -> bool:
    return all(median_uncertainty(c.ms) <= SETTLED_MEDIAN for c in contenders)


def _timed_call(s: Session, c: Contender, timer: Any, call: Callable[[], Any], when: str) -> Measurement:
    """One timed call of a contender in its precision setting; the candidate's exceptions are its
    own failure (CandidateRuntimeError), anyone else's propagate."""
    c.before()
    try:
        return timer.measure(call)
    except (Exception, SystemExit) as exc:
        if c.name == "cand":
            raise CandidateRuntimeError(f"{s.candidate.path}: forward raised {describe(exc)} {when}") from None
        raise
    finally:
        c.after()
        if c.model is not None:  # outside the timed region
            _drop_state_history(c)


def _drop_state_history(c: Contender) -> None:
    assert c.model is not None
    try:
        drop_state_history(c.model)
    except Exception:  # noqa: BLE001 - a candidate's module that cannot be walked keeps its state as is
        if c.name != "cand":
            raise


def _fresh_input_probe(s: Session, ref: Contender, cand: Contender, timer: Any,
                       buffers: Optional[List[List[Any]]]) -> None:
    """Flags a candidate whose gain holds only on inputs it was timed on before (result_cache):
    slow on new inputs against its timed median, and again against itself re-timed now on inputs
    it has seen (one round of single calls can be slowed by a busy machine; a memo is slow on
    every new input). The new values are written into the timed input buffers (`buffers`, shared by
    the contenders) where they are given: a memo of contents must compute them, while work done
    once per buffer address (CUDA-graph trees' input bookkeeping) is not counted against a
    candidate; a memo keyed by the address answers stale results, which the staleness checks see."""
    if s.resp.speedup is None or s.resp.speedup < MEMO_MIN_GAIN:
        return
    sets = FRESH_SETS if s.facts.input_bytes <= ONE_SET_INPUT_BYTES else 3
    fresh = _fresh_times(s, (ref, cand), timer, buffers, FRESH_SEED_BASE, sets)
    found = _memo_slowdown(fresh, {"ref": s.resp.ref_ms, "cand": s.resp.cand_ms})
    if found is None:
        return
    seen = _alternating_times(s, (ref, cand), timer, sets, lambda k: lambda c: (c.calls[0], c.calls[0]),
                              "on inputs seen before")
    again = _fresh_times(s, (ref, cand), timer, buffers, FRESH_SEED_BASE + sets, sets)
    if _memo_slowdown(again, {name: statistics.median(ms) for name, ms in seen.items()}) is None:
        return
    cand_ratio, ref_ratio = found
    s.resp.add_flag("result_cache")
    s.resp.add_note(f"on inputs it had not seen, the candidate took {cand_ratio:.2f}x its timed median "
                    f"(the reference {ref_ratio:.2f}x), and again against itself re-timed on inputs it had "
                    f"seen: its speed comes from remembering inputs (ms, candidate: timed {s.resp.cand_ms:.4g}, "
                    f"new inputs {_ms_list(fresh['cand'])}, seen {_ms_list(seen['cand'])}, new again "
                    f"{_ms_list(again['cand'])}; reference: timed {s.resp.ref_ms:.4g}, new inputs "
                    f"{_ms_list(fresh['ref'])}; {'written into the timed buffers' if buffers else 'new tensors'})")


def _ms_list(ms: List[float]) -> str:
    return "[" + ", ".join(f"{m:.4g}" for m in ms) + "]"


def _fresh_times(s: Session, contenders: Tuple[Contender, Contender], timer: Any, buffers: Optional[List[List[Any]]],
                 seed: int, sets: int) -> Dict[str, List[float]]:
    """One call of each contender on each of `sets` input sets never seen before, order alternated:
    their values written into the timed buffers where given (round k into buffers[k % len(buffers)],
    whose calls are c.calls[k % len(buffers)]), else in new tensors (a copy per contender: the
    reference changes its inputs). Each follows an untimed call on a set the new values did not
    reach (none where they overwrote the only one)."""

    def calls_on_new_inputs(k: int) -> Callable[[Contender], ProbeCalls]:
        inputs = s.make_inputs(seed + k)  # dropped with the closure, before the next set is made
        if buffers is not None:
            n = k % len(buffers)
            if copy_values_into(buffers[n], inputs):
                other = (n + 1) % len(buffers)
                return lambda c: (c.calls[n], c.calls[other] if other != n else None)
            return lambda c: (c.make_call(inputs), c.calls[0])
        return lambda c: (c.make_call(clone_all(inputs)), c.calls[0])

    return _alternating_times(s, contenders, timer, sets, calls_on_new_inputs, "on new inputs")


# A probe's timed call, and the untimed call of the same contender just before it (or None).
ProbeCalls = Tuple[Callable[[], Any], Optional[Callable[[], Any]]]


def _alternating_times(s: Session, contenders: Tuple[Contender, Contender], timer: Any, rounds: int,
                       calls_of_round: Callable[[int], Callable[[Contender], ProbeCalls]],
                       when: str) -> Dict[str, List[float]]:
    """One timed call of each contender per round, the order alternated; calls_of_round(k) gives
    each contender's call of round k and the call to make untimed just before it. That call puts
    the contender where every timed round's call is, right after its own last call: the judge's
    work between rounds (new inputs made and copied) then costs neither contender time of its
    timed call (on the GPU it cost plain torch.compile and the reference alike about 0.085 ms, so
    that a ratio charged it to the faster one, call 113). A memo's untimed call is on other inputs,
    so it meets the new ones first in the timed call."""
    times: Dict[str, List[float]] = {c.name: [] for c in contenders}
    for k in range(rounds):
        call_of = calls_of_round(k)
        for c in contenders if k % 2 == 0 else contenders[::-1]:
            timed, before = call_of(c)
            if before is not None:
                _timed_call(s, c, timer, before, when).result = None
            m = _timed_call(s, c, timer, timed, when)
            times[c.name].append(m.ms)
            m.result = None
        del call_of
    return times


def _memo_slowdown(fresh: Dict[str, List[float]], seen_ms: Dict[str, float]) -> Optional[Tuple[float, float]]:
    """(candidate's, reference's) ratio of new-input time to seen-input time when the candidate
    slowed as a memo does, else None. Single calls of a problem of a few microseconds vary by more
    than 2x; a memo's saving is the computation it skips, which shows in absolute time too."""
    cand_fresh = statistics.median(fresh["cand"])
    ref_ratio = statistics.median(fresh["ref"]) / max(seen_ms["ref"], 1e-9)
    cand_ratio = cand_fresh / max(seen_ms["cand"], 1e-9)
    if cand_ratio > MEMO_SLOWDOWN * max(1.0, ref_ratio) and cand_fresh - seen_ms["cand"] > MEMO_MIN_EXTRA_MS:
        return cand_ratio, ref_ratio
    return None


def _report(s: Session, contenders: List[Contender]) -> None:
    stats = {c.name: summarize(c.ms) for c in contenders}
    s.resp.timing = stats
    s.resp.ref_ms = stats["ref"].median_ms
    s.resp.cand_ms = stats["cand"].median_ms
    s.resp.speedup = s.resp.ref_ms / s.resp.cand_ms if s.resp.cand_ms > 0 else None
    if "compile" in stats:
        s.resp.compile_ms = stats["compile"].median_ms
        s.resp.speedup_vs_compile = s.resp.compile_ms / s.resp.cand_ms if s.resp.cand_ms > 0 else None
    if s.device.type == "cuda":
        by_name = {c.name: c for c in contenders}
        ref_c, cand_c = by_name["ref"], by_name["cand"]
        wait_ms = statistics.median(ref_c.hidden_ms) if ref_c.hidden_ms else 0.0
        if hides_device_work(cand_c.hidden_ms, cand_c.ms, wait_ms) and not hides_device_work(ref_c.hidden_ms, ref_c.ms):
            s.resp.add_flag("side_stream")
            s.resp.add_note(
                f"device work after the candidate's stream was done: {sum(cand_c.hidden_ms):.4g} ms, "
                f"against {sum(cand_c.ms):.4g} ms timed by its events")


def _check_last_outputs(s: Session, cand: Contender, pristine: List[List[Any]], tol: Tol, rel_l2_limit: float,
                        shared: bool) -> None:
    """The candidate's last timed output of each input set against eager's on the same inputs (tol:
    compare.against_eager): a result remembered from an earlier call shows here."""
    stale = []
    for k, raw in sorted(cand.last.items()):
        inputs = pristine[k] if shared else clone_all(pristine[k])
        eager = s.call_eager(inputs, TIMING_SEED_BASE + k)
        if not matches(raw, eager, tol, s.req.atol, rel_l2_limit):
            stale.append(k)
        del eager
    cand.last.clear()
    if stale:
        s.resp.add_flag("result_cache")
        s.resp.add_note(f"the last timed call's output is wrong for input set(s) {stale}")
    if s.device.type == "cuda":
        guards.cuda_synchronize(s.device)

