"""One verification trial: fresh inputs from a seed, the candidate (twice, over two
different poisons) before the reference, then every check that compares the two."""

from dataclasses import dataclass, field
from typing import Any, List, Optional, Set

import torch

from .checks import aliases_anything, check_structure
from .compare import EAGER_WIDEN_FACTOR, OutputDiff, Tol, diff, eager_errors, poison_dependent_fraction, widened
from .errors import CandidateRuntimeError
from .outputs import output_list
from .poison import PoisonMode
from .response import ErrLocation, OutputSpec, Trial
from .session import Session
from .tensors import clone_all, dtype_name, fingerprint, flat_tensors, nbytes, same_values
from .verdict import Verdict

UNINITIALIZED_SHARE = 0.9
ZERO_SHARE = 0.9


def _mutated(before: List[Any], after: List[Any]) -> Set[int]:
    return {i for i, (a, b) in enumerate(zip(flat_tensors(before), flat_tensors(after))) if not same_values(a, b)}


@dataclass
class CandidateCalls:
    """Two calls on identical inputs: over NaN-poisoned memory (a), then over the sentinel (b)."""

    inputs_a: List[Any] = field(default_factory=list)
    raw_a: Any = None
    raw_b: Any = None
    error: Optional[CandidateRuntimeError] = None


def _call_candidate_twice(s: Session, v: Verdict, pristine: List[Any], seed: int, prime: bool) -> CandidateCalls:
    calls = CandidateCalls()
    try:
        if prime:
            # Warms up lazy compilation and tells the CPU poisoner what sizes to expect.
            primed = s.call_candidate(clone_all(pristine), seed, PoisonMode.NAN)
            s.poisoner.expected_nbytes = [nbytes(t) for t in flat_tensors(output_list(primed) or [])]
            del primed
        calls.inputs_a = clone_all(pristine)
        calls.raw_a = s.call_candidate(calls.inputs_a, seed, PoisonMode.NAN)
        v.cand_mutated_inputs |= _mutated(pristine, calls.inputs_a)
        inputs_b = clone_all(pristine)
        calls.raw_b = s.call_candidate(inputs_b, seed, PoisonMode.SENTINEL)
        v.cand_mutated_inputs |= _mutated(pristine, inputs_b)
    except CandidateRuntimeError as exc:
        calls.error = exc
    return calls


def _trial_tolerance(v: Verdict, eager: List[torch.Tensor], ref: List[torch.Tensor]) -> Tol:
    """The tolerance policy of DESIGN.md section 3, from this trial's eager error."""
    errors = [eager_errors(eo, ro, v.base.atol) for eo, ro in zip(eager, ref)]
    e = max((x.policy_err for x in errors), default=0.0)
    tol = widened(v.base, e, v.policy)
    if tol.atol > v.base.atol or tol.rtol > v.base.rtol:
        v.widened_by_eager = True
    if v.tol is None or tol.atol > v.tol.atol:
        v.tol = tol
    v.eager_abs = max([v.eager_abs] + [x.max_abs for x in errors])
    v.eager_rel = max([v.eager_rel] + [x.max_rel for x in errors])
    eager_l2 = max([x.rel_l2 for x in errors if x.ref_norm > 0] + [0.0])
    v.rel_l2_limit = max(v.rel_l2_limit, EAGER_WIDEN_FACTOR * eager_l2)
    return tol


def run_trial(s: Session, v: Verdict, seed: int, prime: bool) -> None:
    pristine = s.make_inputs(seed)
    calls = _call_candidate_twice(s, v, pristine, seed, prime)
    eager_in = clone_all(pristine)
    eager = s.call_eager(eager_in, seed)  # a broken problem wins over a broken candidate
    v.ref_mutated_inputs |= _mutated(pristine, eager_in)
    if not s.resp.outputs:
        s.resp.outputs = [OutputSpec(list(t.shape), dtype_name(t.dtype)) for t in eager]
    if calls.error is not None:
        raise calls.error
    ref = s.refs.get(seed, pristine)

    with s.phases.phase("candidate_checks"):
        _check_trial(s, v, seed, pristine, calls, eager, eager_in, ref.outputs)


def _check_trial(s: Session, v: Verdict, seed: int, pristine: List[Any], calls: CandidateCalls,
                 eager: List[torch.Tensor], eager_in: List[Any], ref: List[torch.Tensor]) -> None:
    st = check_structure(calls.raw_a, eager)
    for flag in st.flags:
        s.resp.add_flag(flag)
    if st.error_kind is not None:
        v.fail(st.error_kind, f"{s.candidate.path}: {st.error}")
        return
    outs = st.outputs
    if not aliases_anything(eager, eager_in, s.ref_model):
        found = aliases_anything(outs, calls.inputs_a, s.cand_model)
        if found:
            s.resp.add_flag("output_aliases_input")
            s.resp.add_note("; ".join(found))

    with s.phases.phase("eager_error"):
        tol = _trial_tolerance(v, eager, ref)
    diffs = [diff(o, r, tol, v.base.atol) for o, r in zip(outs, ref)]
    passed = all(d.passes(v.rel_l2_limit) for d in diffs)
    trial_abs = max(d.max_abs for d in diffs) if diffs else 0.0
    trial_rel = max(d.max_rel for d in diffs) if diffs else 0.0
    s.resp.trials.append(Trial(seed, trial_abs, trial_rel, passed))
    v.max_abs, v.max_rel = max(v.max_abs, trial_abs), max(v.max_rel, trial_rel)
    v.rel_l2 = max([v.rel_l2] + [d.rel_l2 for d in diffs])
    _track_worst(v, diffs)

    _poison_flags(s, outs, output_list(calls.raw_b) or [], ref, tol)
    _value_flags(s, diffs, passed)
    in_fp, out_fp = fingerprint(pristine), fingerprint(outs)
    if not passed:
        # The output one earlier trial got right, now returned for other inputs.
        if any(ok and ofp == out_fp and ifp != in_fp for ifp, ofp, ok in v.calls):
            s.resp.add_flag("result_cache")
            s.resp.add_note(f"seed {seed}: the output repeats one returned earlier for different inputs")
        _fail_numeric(s, v, diffs, tol, seed)
    v.calls.append((in_fp, out_fp, passed))


def _track_worst(v: Verdict, diffs: List[OutputDiff]) -> None:
    for i, d in enumerate(diffs):
        if d.worst_ratio > v.worst_ratio:
            v.worst_ratio = d.worst_ratio
            v.location = ErrLocation(i, d.worst_index, d.worst_cand, d.worst_ref)


def _poison_flags(s: Session, a: List[torch.Tensor], b: List[Any], ref: List[torch.Tensor], tol: Tol) -> None:
    for i, (out_a, r) in enumerate(zip(a, ref)):
        if i >= len(b) or not isinstance(b[i], torch.Tensor):
            continue
        out_b = b[i].as_subclass(torch.Tensor) if type(b[i]) is not torch.Tensor else b[i]
        share = poison_dependent_fraction(out_a, out_b, r, tol)
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
        if d.special_mismatch or d.worst_ratio > 1.0:
            v.fail("mismatch", f"seed {seed}: output {i} differs at index {d.worst_index}: candidate {d.worst_cand!r}, "
                               f"reference {d.worst_ref!r} (tolerance atol {tol.atol:.3g} + rtol {tol.rtol:.3g}*|ref|)")
            return
        if d.ref_norm > 0 and d.rel_l2 > v.rel_l2_limit:
            v.fail("mismatch", f"seed {seed}: output {i} relative L2 error {d.rel_l2:.3g} exceeds {v.rel_l2_limit:.3g} "
                               "(every element is within atol, but the values are wrong)")
            return


def mutation_flags(s: Session, v: Verdict) -> None:
    if (v.cand_mutated_inputs - v.ref_mutated_inputs) or s.state_mutation_flagged():
        s.resp.add_flag("input_mutated")
        changed = sorted(v.cand_mutated_inputs - v.ref_mutated_inputs)
        if changed:
            s.resp.add_note(f"candidate changed input(s) {changed}")
        if s.cand_changed_state:
            s.resp.add_note(f"candidate changed parameter/buffer(s) {sorted(s.cand_changed_state)}")
