"""The eval op: verification trials, anti-cheat checks, then timing.

Memory is poisoned before every candidate call and the float64 reference of a trial is
computed (or read) after the candidate has run, so a candidate cannot pick up the
reference's freed outputs.
"""

from typing import Any, Dict, List, Optional

import torch

from . import guards, memory, ncu, progress
from .compare import Tol, against_eager
from .costmodel import effective_peak_tflops, sol_ms, sol_score, unit_peaks
from .signature import build_signature, profile_forward, profiled_runs
from .errors import CandidateRuntimeError
from .ncu_target import TargetSpec
from .opsrec import record_ops, shared_reference_ops
from .outputs import output_list
from .poison import PoisonMode
from .response import Tolerance
from .session import Session
from .stale import run_staleness_checks
from .tensors import clone_all, detached, same_values
from .timing_phase import run_timing
from .trials import mutation_flags, run_trial
from .verdict import Verdict

# Flags that are reported but do not make a candidate incorrect.
INFORMATIONAL_FLAGS = frozenset({"calls_reference_op", "reference_as_candidate"})


def evaluate(s: Session, record_ops: bool = True) -> None:
    """Judges the session's candidate into s.resp. Without record_ops, the candidate's ops are not
    recorded: more calls of the same candidate follow in this process (another workload), and none
    may come after a recording (_after_trials)."""
    req = s.req
    v = Verdict(base=_base_tolerance(s), policy=req.tolerance_policy)
    with s.phases.phase("trials"):
        for n, seed in enumerate(req.seeds):
            run_trial(s, v, seed, prime=n == 0)
            if v.error_kind in ("shape", "dtype", "cheat"):
                break
        mutation_flags(s, v)
    memory.release_cached_blocks(s.device)  # before timing's allocations
    if v.error_kind not in ("shape", "dtype"):
        _after_trials(s, v, record_ops)
    _finish(s, v)


def _base_tolerance(s: Session) -> Tol:
    """The request's atol and rtol, unless the problem sets its own (a SOL-ExecBench workload's)."""
    declared = s.problem.tolerance
    if declared is None:
        return Tol(s.req.atol, s.req.rtol)
    s.resp.add_note(f"tolerance set by the problem: atol {declared.atol:.3g}, rtol {declared.rtol:.3g}, "
                    f"{declared.matched_ratio:.2%} of elements within, error cap {declared.error_cap}")
    return declared


def _can_still_pass(s: Session, v: Verdict) -> bool:
    return not v.failed and not any(f not in INFORMATIONAL_FLAGS for f in s.resp.flags)


def _after_trials(s: Session, v: Verdict, record_ops: bool) -> None:
    facts = s.facts
    s.resp.flops, s.resp.min_bytes, s.resp.input_bytes = facts.flops, facts.min_bytes, facts.input_bytes
    s.resp.output_bytes = facts.output_bytes
    s.resp.copied_tensors = facts.copied_tensors or None
    s.resp.moved_bytes = facts.moved_bytes
    setting, ceilings = s.precision.candidate_setting, s.req.device_ceilings
    s.resp.sol_ms = sol_ms(facts.flops, facts.min_bytes, ceilings, tf32=setting.cudnn,
                           dtype=facts.compute_dtype, flops_by_unit=facts.flops_by_unit,
                           matmul_tf32=setting.matmul)
    if ceilings is not None:
        peaks = unit_peaks(ceilings, facts.compute_dtype, setting.cudnn, setting.matmul)
        s.resp.sol_peak_tflops = effective_peak_tflops(facts.flops_by_unit, peaks)
    for note in facts.notes:
        s.resp.add_note(note)
    if _can_still_pass(s, v):
        _time_and_check(s, v)
    else:
        s.resp.add_note("timing and staleness checks skipped: the candidate already failed")
    # Last of all: one call under a TorchDispatchMode leaves a torch.compile'd module running its
    # eager code for the rest of the process (PyTorch 2.11, no recompile counted), so no call that
    # is timed or profiled may come after it.
    if record_ops:
        with s.phases.phase("op_recording"):
            _record_candidate_ops(s, s.make_inputs(s.req.seeds[0]))
    _speed_of_light_flag(s)
    s.resp.sol_score = sol_score(s.resp.cand_ms, s.resp.ref_ms, s.resp.sol_ms)
    s.resp.sol_score_vs_compile = sol_score(s.resp.cand_ms, s.resp.compile_ms, s.resp.sol_ms)


def _time_and_check(s: Session, v: Verdict) -> None:
    if s.device.type == "cuda":
        with s.phases.phase("side_stream_check"):
            if _side_stream_output_check(s, s.make_inputs(s.req.seeds[0])):
                s.resp.add_flag("side_stream")
                s.resp.add_note("output read after syncing only the current stream differs from after a device sync")
    tol = v.tol or v.base
    timed_buffers: Optional[List[Any]] = None
    if s.req.timing is not None:
        # The driver pauses the workers it is starting meanwhile (their imports and CUDA set-up
        # would slow host-bound forwards) until "timed".
        progress.report("timing")
        try:
            with s.phases.phase("timing"):
                timed = run_timing(s, tol, v.rel_l2_limit, v.eager_err, s.req.timing)
        finally:
            progress.report("timed")
        timed_buffers = timed.cand_buffers
    with s.phases.phase("stale_checks"):
        run_staleness_checks(s, against_eager(tol, v.eager_err), v.rel_l2_limit, timed_buffers)
    del timed_buffers
    s.after_candidate_code("during timing")
    if s.req.profile:
        with s.phases.phase("profile"):
            _profile(s, s.make_inputs(s.req.seeds[0]))
            s.after_candidate_code("during profiling")


# How far under the speed of light a candidate must be to be flagged. A GPU's ceilings are
# measured peaks that hold; a CPU's come from a short calibration that other processes and turbo
# move by 2x (a problem judged against itself on a busy 2-core host read 1.57x and 0.86 x its
# estimate), and a candidate that returns stored results is far faster than either.
SOL_MARGIN = {"cuda": 0.9}
SOL_MARGIN_OTHER_DEVICES = 0.5


def _speed_of_light_flag(s: Session) -> None:
    """A candidate faster than SOL_MARGIN x the speed of light is flagged, if the ceiling holds for
    eager: eager below it means the count (FLOPs, bytes) or the ceiling is off for this problem.
    Eager's fastest tenth decides, not its median: on a busy host the median of eager can rise
    above an estimate that its best runs (and so an honest copy of it) beat."""
    sol, cand = s.resp.sol_ms, s.resp.cand_ms
    margin = SOL_MARGIN.get(s.device.type, SOL_MARGIN_OTHER_DEVICES)
    if sol is None or cand is None or cand >= margin * sol:
        return
    ref_stats = (s.resp.timing or {}).get("ref")
    ref = ref_stats.p10_ms if ref_stats is not None else s.resp.ref_ms
    if ref is not None and ref < sol:
        s.resp.add_note(f"no speed-of-light check: eager itself took {ref:.4g} ms, under the estimate {sol:.4g} ms")
        return
    s.resp.add_flag("beyond_speed_of_light")
    s.resp.add_note(f"candidate took {cand:.4g} ms, below {margin:g} x speed of light {sol:.4g} ms")


def _profile(s: Session, pristine: List[Any]) -> None:
    """Signatures of candidate and reference (the latter where the request asks for it), each over
    its own copy of the first trial's inputs, with the measured medians as their total times; with
    "profiler": "ncu", the candidate's also gets Nsight Compute's numbers."""
    on_gpu = s.device.type == "cuda"
    sides = [("signature", s.candidate_callable(clone_all(pristine), s.candidate_grad), s.resp.cand_ms)]
    if s.req.profile_reference:
        sides.append(("reference_signature", s.eager_callable(clone_all(pristine), s.candidate_grad),
                      s.resp.ref_ms))
    for attribute, forward, total_ms in sides:
        try:
            profiled = profile_forward(forward, s.device, runs=profiled_runs(total_ms),
                                       grad=s.candidate_grad)
        except Exception as exc:  # noqa: BLE001 - a profiler failure costs the signature, not the verdict
            s.resp.add_note(f"profiling failed: {type(exc).__name__}: {exc}")
            break
        measured = total_ms if total_ms is not None else float(profiled["busy_ms"])
        setattr(s.resp, attribute, build_signature(profiled, measured, on_gpu))
    if s.req.profiler == "ncu" and s.resp.signature is not None:
        s.after_candidate_code("during profiling")  # restores any patched clock before ncu's time limit
        with s.phases.phase("ncu"):
            s.resp.signature.update(_ncu_keys(s))


def _ncu_keys(s: Session) -> Dict[str, Any]:
    assert s.req.problem is not None and s.req.candidate is not None
    spec = TargetSpec(problem=s.req.problem, candidate=s.req.candidate, device=str(s.device),
                      init_seed=s.req.init_seed, seed=s.req.seeds[0], allow_tf32=s.req.allow_tf32,
                      tolerance_policy=s.req.tolerance_policy, grad=s.candidate_grad)
    if s.device.type == "cuda":
        torch.cuda.empty_cache()  # the child builds its own model and inputs on the same device
    try:
        keys = ncu.candidate_keys(spec, s.device, s.req.ncu_launch_count, s.req.ncu_timeout_s)
    except Exception as exc:  # noqa: BLE001 - ncu costs neither the verdict nor the torch signature
        keys = ncu.signature_keys(ncu.NcuOutcome("failed", f"{type(exc).__name__}: {exc}"), s.req.ncu_launch_count)
    report = keys["ncu"]
    if report["status"] != "ok":
        s.resp.add_note(f"ncu {report['status']}: {report['reason']}")
    return keys


def _record_candidate_ops(s: Session, pristine: List[Any]) -> None:
    try:
        s.precision.enter_candidate()
        inputs = clone_all(pristine) if s.facts.ref_mutated_inputs else pristine
        cand_ops = record_ops(s.candidate_callable(inputs, s.candidate_grad))
        s.after_candidate_code()
    except CandidateRuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - recording is best effort
        s.resp.add_note(f"op recording failed: {type(exc).__name__}: {exc}")
        return
    shared = shared_reference_ops(set(s.facts.ref_ops), cand_ops)
    if shared and not s.candidate.is_reference:
        s.resp.add_flag("calls_reference_op")
        s.resp.add_note(f"candidate calls the reference's library op(s): {'; '.join(shared)}")


def _side_stream_output_check(s: Session, pristine: List[Any]) -> bool:
    """Reads the output after syncing only the current stream, then after a device-wide
    sync; work left running on another stream shows up as a difference."""
    for _ in range(3):
        inputs = pristine
        s.poisoner.poison(PoisonMode.NAN)
        s.precision.enter_candidate()
        stream = guards.cuda_current_stream(s.device)
        try:
            with torch.set_grad_enabled(s.candidate_grad):
                raw = detached(s.cand_model(*inputs))
        except (Exception, SystemExit) as exc:
            raise CandidateRuntimeError(f"{s.candidate.path}: forward raised {type(exc).__name__}: {exc}") from None
        guards.cuda_stream_synchronize(stream)
        outs = [o for o in (output_list(raw) or []) if isinstance(o, torch.Tensor)]
        early = output_snapshot(outs)
        guards.cuda_stream_synchronize(stream)
        guards.cuda_synchronize(s.device)
        s.after_candidate_code()
        changed = not same_outputs(early, [contiguous_values(o) for o in outs])
        del raw, outs, early  # before the next forward: one output and its copy at a time
        if changed:
            return True
    return False


def output_snapshot(outs: List[torch.Tensor]) -> List[torch.Tensor]:
    """Contiguous copies of the outputs' values, whatever their layout (a clone of a view with
    gaps is laid out anew, so its strides cannot be compared with the view's)."""
    return [o.detach().clone(memory_format=torch.contiguous_format) for o in outs]


def contiguous_values(t: torch.Tensor) -> torch.Tensor:
    """t itself when contiguous (no copy), else a contiguous copy, to compare with a snapshot."""
    return t.detach() if t.is_contiguous() else t.detach().contiguous()


def same_outputs(a: List[torch.Tensor], b: List[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))


# ---- the verdict --------------------------------------------------------------------------------


def _finish(s: Session, v: Verdict) -> None:
    resp = s.resp
    resp.max_abs_err = v.max_abs if resp.trials else None
    resp.max_rel_err = v.max_rel if resp.trials else None
    resp.rel_l2_err = v.rel_l2 if resp.trials else None
    resp.err_location = v.location
    resp.eager_max_abs_err = v.eager_abs if resp.trials else None
    resp.eager_max_rel_err = v.eager_rel if resp.trials else None
    tol = v.tol or v.base
    resp.tolerance = Tolerance(tol.atol, tol.rtol, v.policy, v.widened_by_eager,
                               tol.matched_ratio if tol.matched_ratio < 1.0 else None, tol.error_cap)
    resp.outputs = list(s.facts.outputs)
    resp.reference_precision = s.facts.plan.precision
    resp.reference_computations = s.reference_computations
    resp.reference_cache_hits = max(0, len(s.req.seeds) - s.reference_computations)
    for note in s.side.notes + s.inputs.notes:
        resp.add_note(note)
    # Judged against eager's own need in the mode the forwards were timed in.
    recording = s.req.timing is not None and s.req.timing.autograd and s.facts.eager_peak_autograd_bytes
    eager_need = s.facts.eager_peak_autograd_bytes if recording else s.facts.eager_peak_bytes
    resp.memory = memory.report(s.device, eager_need, s.facts.plan.mode)
    failing = [f for f in resp.flags if f not in INFORMATIONAL_FLAGS]
    if not v.failed and failing:
        v.fail("cheat", f"suspicious behaviour: {', '.join(failing)}")
    resp.correct = not v.failed
    resp.error_kind = v.error_kind
    resp.error = v.error
    if resp.error is not None and failing and v.error_kind != "cheat":
        resp.error += f" [flags: {', '.join(failing)}]"
    if resp.speedup is None and resp.ref_ms and resp.cand_ms:
        resp.speedup = resp.ref_ms / resp.cand_ms
