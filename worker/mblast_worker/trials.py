"""One verification trial: fresh inputs from a seed, the candidate twice (over two different
poisons), each output streamed against the float64 reference, then every check on the result.

Memory stays within a small multiple of what eager needs: the inputs exist once (a change made in
place is seen through their digest, not through a kept copy), one candidate output at a time, and
the reference in pieces (reference.py) compared as they come (compare.py)."""

from typing import Any, Iterable, Iterator, List

import torch

from . import progress
from .checks import Expected, aliases_anything, check_structure
from .compare import EAGER_WIDEN_FACTOR, OutputDiff, Tol, count_poison, flat_view, poison_share, poison_word, widened
from .facts import SeedFacts, compare_streamed, seed_facts
from .outputs import output_list
from .poison import SENTINEL, PoisonMode
from .reference import RefChunk, iter_reference
from .response import ErrLocation, Trial
from .session import Session
from .tensors import chunks, digest
from .verdict import Verdict

UNINITIALIZED_SHARE = 0.9
ZERO_SHARE = 0.9
NAN_WORD = poison_word(float("nan"))
SENTINEL_WORD = poison_word(SENTINEL)


def expected_outputs(s: Session) -> List[Expected]:
    dense = s.facts.dense_outputs or [True] * len(s.facts.outputs)
    return [Expected(tuple(o.shape), getattr(torch, o.dtype), s.device, d) for o, d in zip(s.facts.outputs, dense)]


def reference_pieces(s: Session, seed: int, inputs: List[Any], stored_ok: bool) -> Iterable[RefChunk]:
    """The seed's float64 reference: the stored one, else computed now, piece by piece."""
    stored = s.references.get(seed) if stored_ok else None
    if stored is not None:
        return [(None, stored)]
    return _timed(s, iter_reference(s.side.models, s.facts.plan, inputs, seed))


def _timed(s: Session, pieces: Iterable[RefChunk]) -> Iterator[RefChunk]:
    it = iter(pieces)
    while True:
        with s.phases.phase("reference"):
            try:
                piece = next(it)
            except StopIteration:
                return
        yield piece


def _changed(before: List[List[float]], inputs: List[Any]) -> List[int]:
    return [i for i, (a, b) in enumerate(zip(before, digest(inputs))) if a != b]


def run_trial(s: Session, v: Verdict, seed: int, prime: bool) -> None:
    sf = s.facts.seeds[str(seed)]
    inputs = s.make_inputs(seed)
    before = digest(inputs)
    stored_ok = before == sf.input_digest
    if not stored_ok:
        s.resp.add_note(f"seed {seed}: get_inputs() gave other values than when the problem was prepared "
                        "(not deterministic under its seed); its reference is computed again")
        sf = seed_facts(s.side, s.facts, inputs, seed, None)
    if not stored_ok or seed not in s.references:
        s.reference_computations += 1
    if prime:
        # Warms up lazy compilation before the calls that count; the driver's compile allowance
        # ends here.
        with s.phases.phase("first_call"):  # lazy compilation (torch.compile, Triton) happens here
            s.call_candidate(inputs, seed, PoisonMode.NAN)
        progress.report("primed")
        if s.req.hold and progress.has_driver():
            with s.phases.phase("held"):  # waiting for the driver, not the candidate's time
                progress.hold()
        inputs = _check_mutation(s, v, seed, before, inputs)
    tol = _trial_tolerance(v, sf)
    raw_a = s.call_candidate(inputs, seed, PoisonMode.NAN)
    st = check_structure(raw_a, expected_outputs(s))
    for flag in st.flags:
        s.resp.add_flag(flag)
    if st.error_kind is not None:
        v.fail(st.error_kind, f"{s.candidate.path}: {st.error}")
        return
    if not s.facts.ref_output_aliases:
        found = aliases_anything(st.outputs, inputs, s.cand_model)
        if found:
            s.resp.add_flag("output_aliases_input")
            s.resp.add_note("; ".join(found))
    if _changed(before, inputs):
        # The output may be the changed input itself: compare the values it holds now, then give
        # the reference pristine inputs.
        st.outputs = [o.clone() for o in st.outputs]
        inputs = _check_mutation(s, v, seed, before, inputs)
    with s.phases.phase("candidate_checks"):
        diffs = compare_streamed(st.outputs, reference_pieces(s, seed, inputs, stored_ok), tol, v.base.atol,
                                 poison=NAN_WORD, scale_hints=sf.ref_abs_max)
    del raw_a, st
    raw_b = s.call_candidate(inputs, seed, PoisonMode.SENTINEL)
    _check_mutation(s, v, seed, before, inputs)
    sentinel_counts = [_poison_count(o) for o in (output_list(raw_b) or [])]
    del raw_b
    _record(s, v, seed, before, diffs, sentinel_counts, tol)


def _check_mutation(s: Session, v: Verdict, seed: int, before: List[List[float]], inputs: List[Any]) -> List[Any]:
    changed = _changed(before, inputs)
    if not changed:
        return inputs
    v.cand_mutated_inputs |= set(changed)
    return s.make_inputs(seed)  # the next call and the reference get pristine inputs again


def _poison_count(out: Any) -> int:
    if not isinstance(out, torch.Tensor):
        return 0
    flat = flat_view(out.as_subclass(torch.Tensor) if type(out) is not torch.Tensor else out)
    return int(sum(count_poison(flat[a:b], SENTINEL_WORD) for a, b in chunks(flat.numel())))


def _trial_tolerance(v: Verdict, sf: SeedFacts) -> Tol:
    """The tolerance policy of docs/ARCHITECTURE.md §3, from this seed's eager error."""
    tol = widened(v.base, sf.eager_policy_err, v.policy, sf.eager_max_abs)
    if tol.atol > v.base.atol or tol.rtol > v.base.rtol:
        v.widened_by_eager = True
    if v.tol is None or tol.atol > v.tol.atol:
        v.tol = tol
    v.eager_abs = max(v.eager_abs, sf.eager_max_abs)
    v.eager_rel = max(v.eager_rel, sf.eager_max_rel)
    v.eager_err = max(v.eager_err, sf.eager_policy_err)
    v.rel_l2_limit = max(v.rel_l2_limit, EAGER_WIDEN_FACTOR * sf.eager_rel_l2)
    return tol


def _record(s: Session, v: Verdict, seed: int, in_digest: List[List[float]], diffs: List[OutputDiff],
            sentinel_counts: List[int], tol: Tol) -> None:
    passed = all(d.passes(v.rel_l2_limit) for d in diffs)
    trial_abs = max((d.max_abs for d in diffs), default=0.0)
    trial_rel = max((d.max_rel for d in diffs), default=0.0)
    s.resp.trials.append(Trial(seed, trial_abs, trial_rel, passed))
    v.max_abs, v.max_rel = max(v.max_abs, trial_abs), max(v.max_rel, trial_rel)
    v.rel_l2 = max([v.rel_l2] + [d.rel_l2 for d in diffs])
    for i, d in enumerate(diffs):
        if d.worst_ratio > v.worst_ratio:
            v.worst_ratio = d.worst_ratio
            v.location = ErrLocation(i, d.worst_index, d.worst_cand, d.worst_ref)
    _poison_flags(s, diffs, sentinel_counts)
    _value_flags(s, diffs, passed)
    out_digest = [list(d.digest) for d in diffs]
    if not passed:
        # The output one earlier trial got right, now returned for other inputs.
        if any(ok and ofp == out_digest and ifp != in_digest for ifp, ofp, ok in v.calls):
            s.resp.add_flag("result_cache")
            s.resp.add_note(f"seed {seed}: the output repeats one returned earlier for different inputs")
        _fail_numeric(s, v, diffs, tol, seed)
    v.calls.append((in_digest, out_digest, passed))


def _poison_flags(s: Session, diffs: List[OutputDiff], sentinel_counts: List[int]) -> None:
    for i, d in enumerate(diffs):
        if i >= len(sentinel_counts):
            continue
        b = OutputDiff(0, 0, 0, 0, [], None, None, False, False, 0, 0, 0, 0, 0, 0, poison_count=sentinel_counts[i],
                       numel=d.numel)
        share = poison_share(d, b)
        if share > UNINITIALIZED_SHARE:
            s.resp.add_flag("uninitialized_output")
        elif share > 0:
            s.resp.add_flag("partial_output")
            s.resp.add_note(f"output {i}: {share:.1%} of elements were never written (poison survived)")


def _value_flags(s: Session, diffs: List[OutputDiff], passed: bool) -> None:
    for d in diffs:
        zeros = d.zero_fraction >= ZERO_SHARE and d.ref_zero_fraction < ZERO_SHARE
        if zeros:
            s.resp.add_flag("zero_output")
        elif not passed and d.looks_like_reduced_precision():
            s.resp.add_flag("precision_drop")


def _fail_numeric(s: Session, v: Verdict, diffs: List[OutputDiff], tol: Tol, seed: int) -> None:
    for i, d in enumerate(diffs):
        if d.bad_nonfinite:
            v.fail("nan_inf", f"seed {seed}: output {i} has NaN/Inf where the reference is finite "
                              f"(first worst at index {d.worst_index})")
            return
    for i, d in enumerate(diffs):
        why = d.failure(v.rel_l2_limit)
        if why == "elements":
            share = "" if tol.matched_ratio >= 1.0 else (
                f"; {d.over_count / max(d.numel, 1):.2%} of elements are outside it, at most "
                f"{1.0 - tol.matched_ratio:.2%} may be")
            v.fail("mismatch", f"seed {seed}: output {i} differs at index {d.worst_index}: candidate {d.worst_cand!r}, "
                               f"reference {d.worst_ref!r} (tolerance atol {tol.atol:.3g} + rtol {tol.rtol:.3g}*|ref|"
                               f"{share})")
            return
        if why == "error_cap":
            v.fail("mismatch", f"seed {seed}: output {i} has an absolute error of {d.max_abs:.3g}, above the "
                               f"workload's cap {tol.error_cap:.3g}")
            return
        if why == "rel_l2":
            v.fail("mismatch", f"seed {seed}: output {i} relative L2 error {d.rel_l2:.3g} exceeds {v.rel_l2_limit:.3g} "
                               "(every element is within atol, but the values are wrong)")
            return


def mutation_flags(s: Session, v: Verdict) -> None:
    ref_mutated = set(s.facts.ref_mutated_inputs)
    if (v.cand_mutated_inputs - ref_mutated) or s.state_mutation_flagged():
        s.resp.add_flag("input_mutated")
        changed = sorted(v.cand_mutated_inputs - ref_mutated)
        if changed:
            s.resp.add_note(f"candidate changed input(s) {changed}")
        if s.cand_changed_state:
            s.resp.add_note(f"candidate changed parameter/buffer(s) {sorted(s.cand_changed_state)}")

