"""In-process unit tests of the worker's building blocks (fast; no subprocesses)."""

import math
import sys
import time
from types import SimpleNamespace
from typing import Any, Dict

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mblast_worker import ceilings
from mblast_worker import facts as facts_module
from mblast_worker.checks import Expected, aliases_anything, check_structure
from mblast_worker.compare import (DiffAccumulator, OutputDiff, Tol, count_poison, count_true, diff, eager_error,
                                   poison_share, poison_word, widened)
from mblast_worker.errors import RequestError
from mblast_worker.facts import ProblemFacts
from mblast_worker.evaluate import contiguous_values, output_snapshot, same_outputs
from mblast_worker.guards import NamespaceSnapshot, Tf32Setting, apply_tf32, read_precision_state
from mblast_worker.opsrec import record_ops, shared_reference_ops
from mblast_worker.phases import Phases
from mblast_worker.poison import SENTINEL
from mblast_worker.protocol import json_safe
from mblast_worker.request import parse_request
from mblast_worker.response import Response, Trial
from mblast_worker.tensors import (CHUNK_ELEMENTS, CHUNKS_PER_TENSOR, MAX_CHUNK_ELEMENTS, chunk_elements, chunks,
                                  detached, digest, drop_state_history, is_dense, same_values)
from mblast_worker.timing import hides_device_work, summarize
from mblast_worker.traffic import count_moved_bytes
from conftest import COMPARISON_BUFFERS
from live_bytes import LiveBytes

BASE = Tol(1e-4, 1e-4)


def test_diff_exact_match() -> None:
    r = torch.randn(8, 8, dtype=torch.float64)
    d = diff(r.float(), r, BASE, 1e-4)
    assert d.passes(1e-2) and d.max_abs < 1e-6 and not d.special_mismatch


def test_diff_reports_worst_element() -> None:
    r = torch.zeros(4, 5, dtype=torch.float64) + 1.0
    c = r.float().clone()
    c[2, 3] = 1.5
    d = diff(c, r, BASE, 1e-4)
    assert not d.passes(1e-2)
    assert d.worst_index == [2, 3] and d.worst_cand == 1.5 and d.worst_ref == 1.0
    assert d.max_abs == pytest.approx(0.5)


def test_diff_nan_where_reference_finite() -> None:
    r = torch.ones(3, dtype=torch.float64)
    c = torch.tensor([1.0, float("nan"), 1.0])
    d = diff(c, r, BASE, 1e-4)
    assert d.bad_nonfinite and d.special_mismatch and math.isinf(d.max_abs) and not d.passes(1e-2)


def test_diff_matching_specials_pass() -> None:
    r = torch.tensor([float("nan"), float("inf"), 1.0], dtype=torch.float64)
    d = diff(r.float(), r, BASE, 1e-4)
    assert d.passes(1e-2) and not d.special_mismatch


def test_zeros_pass_elementwise_but_not_rel_l2() -> None:
    r = torch.randn(64, dtype=torch.float64) * 1e-6
    d = diff(torch.zeros(64), r, BASE, 1e-4)
    assert d.worst_ratio <= 1.0 and d.rel_l2 == pytest.approx(1.0) and not d.passes(1e-2)
    assert d.zero_fraction == 1.0 and d.ref_zero_fraction == 0.0


def test_reduced_precision_signature() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    ref = a.double() @ b.double()
    bf16 = diff((a.bfloat16() @ b.bfloat16()).float(), ref, BASE, 1e-4)
    scaled = diff((a @ b) * 1.01, ref, BASE, 1e-4)
    assert bf16.looks_like_reduced_precision()
    assert not scaled.looks_like_reduced_precision()  # a biased error is a bug, not rounding


def test_eager_error_and_widening() -> None:
    r = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    e = torch.tensor([0.001, 1.002, 3.0])
    t = eager_error(e, r)
    assert t == pytest.approx(0.001, rel=1e-3)
    assert widened(BASE, t, "eager-widened").atol == pytest.approx(1.5 * t, rel=1e-6)
    assert widened(BASE, t, "strict") == BASE
    assert widened(BASE, 1e-6, "eager-widened") == BASE


def test_poison_share_counts_elements_that_held_both_poisons() -> None:
    ref = torch.ones(10, dtype=torch.float64)
    a, b = torch.ones(10), torch.ones(10)
    a[5:] = float("nan")
    b[5:] = SENTINEL
    nan_word, sentinel_word = poison_word(float("nan")), poison_word(SENTINEL)
    da, db = diff(a, ref, BASE, 1e-4, poison=nan_word), diff(b, ref, BASE, 1e-4, poison=sentinel_word)
    assert (da.poison_count, db.poison_count) == (5, 5)
    assert poison_share(da, db) == pytest.approx(0.5)
    # merely different results (a stale cache), or a NaN the candidate computed, are not poison
    wrong = diff(torch.full((10,), 2.0), ref, BASE, 1e-4, poison=sentinel_word)
    assert poison_share(da, wrong) == 0.0
    # narrower and wider dtypes see the float32 poison word as halves or pairs of it
    half = torch.full((4,), float("nan")).view(torch.int32).view(torch.float16)
    assert count_poison(half, nan_word) == 8
    assert count_poison(torch.zeros(3, dtype=torch.int64), nan_word) == 0


def test_streamed_diff_matches_a_whole_tensor_diff() -> None:
    torch.manual_seed(3)
    n = CHUNK_ELEMENTS + 1000  # two chunks
    r = torch.randn(n, dtype=torch.float64)
    c = (r + 1e-6 * torch.randn(n, dtype=torch.float64)).float()
    c[CHUNK_ELEMENTS + 7] = 5.0  # the worst element sits in the second chunk
    d = diff(c.reshape(2, -1) if n % 2 == 0 else c, r.reshape(c.shape), BASE, 1e-4)
    err = (c.double() - r).abs()
    assert d.max_abs == pytest.approx(float(err.max()))
    assert d.rel_l2 == pytest.approx(float(err.norm() / r.norm()), rel=1e-9)
    assert d.worst_cand == 5.0 and d.worst_ref == pytest.approx(float(r[CHUNK_ELEMENTS + 7]))
    assert d.numel == n


def test_streamed_diff_finds_specials_and_poison_in_any_chunk() -> None:
    n = CHUNK_ELEMENTS + 10
    r = torch.ones(n, dtype=torch.float64)
    r[5] = math.inf
    c = r.float().clone()
    c[5] = math.inf  # the same infinity: agrees
    assert diff(c, r, BASE, 1e-4).passes(1e-2)
    c[CHUNK_ELEMENTS + 3] = math.nan  # in the second chunk, where the reference is finite
    c[CHUNK_ELEMENTS + 4] = SENTINEL
    d = diff(c, r, BASE, 1e-4, poison=poison_word(SENTINEL))
    assert d.bad_nonfinite and d.special_mismatch and not d.passes(1e-2)
    assert d.worst_index == [CHUNK_ELEMENTS + 3] and d.worst_ratio == math.inf
    assert d.poison_count == 1 and d.max_abs == math.inf
    assert d.zero_fraction == 0.0 and d.numel == n


def test_streamed_diff_statistics_match_their_definitions() -> None:
    torch.manual_seed(5)
    n = 2 * CHUNK_ELEMENTS + 17
    r = torch.randn(n, dtype=torch.float64)
    r[:1000] = 0.0
    c = (r + 1e-3 * torch.randn(n, dtype=torch.float64)).float()
    d = diff(c, r, BASE, 1e-4, scale_hint=float(r.abs().max()))
    err = (c.double() - r).abs()
    assert d.max_rel == pytest.approx(float((err / (r.abs() + 1e-4)).max()))
    assert d.policy_err == pytest.approx(float((err / (r.abs() + 1.0)).max()))
    assert d.ref_zero_fraction == pytest.approx(1000 / n)
    assert d.widespread_fraction == pytest.approx(float((err > 1e-5 * r.abs().max()).double().mean()))
    worst = int((err / (r.abs() * 1e-4 + 1e-4)).argmax())
    assert d.worst_index == [worst] and d.worst_cand == pytest.approx(float(c[worst]))


def test_chunks_grow_with_the_output_and_stay_a_small_share_of_it() -> None:
    assert chunk_elements(10) == CHUNK_ELEMENTS
    assert chunk_elements(64 * CHUNK_ELEMENTS) == CHUNK_ELEMENTS
    assert chunk_elements(128 * CHUNK_ELEMENTS) == 2 * CHUNK_ELEMENTS
    assert chunk_elements(1_610_612_736) == 1 << 23  # level1/19's output: 192 chunks, not 384
    assert chunk_elements(1 << 40) == MAX_CHUNK_ELEMENTS
    for n in (CHUNK_ELEMENTS * 200 + 3, 1 << 33):
        size = chunk_elements(n)
        assert size * CHUNKS_PER_TENSOR <= n and [b - a for a, b in chunks(n)][:1] == [size]


def test_a_digest_is_the_sums_and_the_position_weighted_sum_of_the_values() -> None:
    torch.manual_seed(2)
    t = torch.randn(2 * CHUNK_ELEMENTS + 1500)
    t[CHUNK_ELEMENTS + 9] = math.nan  # counted as 7.0
    d = t.double().nan_to_num(nan=7.0)
    weights = (torch.arange(d.numel(), dtype=torch.int64) % 1021 + 1).double()
    [[n, total, squares, weighted]] = digest([t])
    assert n == t.numel() and total == pytest.approx(float(d.sum()), rel=1e-9)
    assert squares == pytest.approx(float(d.dot(d)), rel=1e-9)
    assert weighted == pytest.approx(float(d.dot(weights)), rel=1e-9)
    moved = t.roll(1)
    assert digest([moved])[0][3] != pytest.approx(weighted, rel=1e-9)  # values that only move change it


def _fed_in_pieces(c: torch.Tensor, r: torch.Tensor, size: int) -> OutputDiff:
    acc = DiffAccumulator(BASE, 1e-4, tuple(c.shape), poison=poison_word(SENTINEL))
    for a, b in chunks(c.numel(), size):
        acc.add(c[a:b], r[a:b])
    return acc.result()


def test_an_accumulator_reads_the_same_whatever_the_chunk_size() -> None:
    torch.manual_seed(11)
    n = 5 * 1021 + 77
    r = torch.randn(n, dtype=torch.float64)
    c = (r + 1e-5 * torch.randn(n, dtype=torch.float64)).float()
    c[4000], c[4001], r[17] = math.nan, SENTINEL, math.inf
    whole = _fed_in_pieces(c, r, n)
    for size in (1, 1000, 1021, 3001):
        part = _fed_in_pieces(c, r, size)
        assert part.digest == pytest.approx(whole.digest, rel=1e-12)
        assert (part.worst_index, part.over_count, part.poison_count) == (whole.worst_index, whole.over_count, 1)
        assert part.rel_l2 == pytest.approx(whole.rel_l2, rel=1e-12)


def test_a_comparison_digests_the_output_as_tensors_digest_does() -> None:
    torch.manual_seed(5)
    r = torch.randn(3000, dtype=torch.float64)
    c = r.float()
    c[10], c[20], c[30] = math.nan, math.inf, -math.inf
    [[_, *expected]] = digest([c])
    assert list(_fed_in_pieces(c, r, 1000).digest) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("ref_dtype,verdict_only,buffers", COMPARISON_BUFFERS)
def test_a_comparison_holds_few_chunk_sized_temporaries(ref_dtype: torch.dtype, verdict_only: bool,
                                                       buffers: int) -> None:
    # The judge's memory budget leaves 1 GiB beside four outputs' worth in the staleness checks:
    # the candidate's float64 copy, the reference's (unless float64), |c - r|, |r|, one scratch
    # buffer and the digest's weights, and nothing more of a chunk's size.
    n = 1 << 16
    r = torch.randn(n, dtype=torch.float64)
    c, ref = (r + 1e-5).float(), r.to(ref_dtype)
    acc = DiffAccumulator(BASE, 1e-4, (2 * n,), poison=poison_word(SENTINEL), verdict_only=verdict_only)
    with LiveBytes() as live:
        acc.add(c, ref)
        acc.add(c, ref)
    assert live.peak <= (buffers + 0.3) * 8 * n  # the rest: masks of one byte per element


def test_a_verdict_only_comparison_fails_what_the_full_one_fails() -> None:
    torch.manual_seed(4)
    r = torch.randn(5000, dtype=torch.float64)
    for noise, special in ((0.0, None), (1e-3, None), (0.1, None), (0.0, math.nan), (0.0, math.inf)):
        c = (r + noise * torch.randn(5000, dtype=torch.float64)).float()
        if special is not None:
            c[7] = special
        for tol in (Tol(1e-4, 1e-4), Tol(1e-3, 1e-3, 0.99, 0.05)):
            for limit in (1e-2, 1e-6):
                full = diff(c, r, tol, tol.atol).failure(limit)
                assert diff(c, r, tol, tol.atol, verdict_only=True).failure(limit) == full


def test_timed_calls_record_autograd_unless_asked_not_to() -> None:
    req = parse_request({"op": "eval", "problem": "/p.py", "candidate": "/c.py"})
    assert req.timing is not None and req.timing.autograd
    off = parse_request({"op": "eval", "problem": "/p.py", "candidate": "/c.py", "timing": {"autograd": False}})
    assert off.timing is not None and not off.timing.autograd


def test_structure_checks() -> None:
    expected = [Expected.of(torch.zeros(2, 3))]
    assert check_structure(torch.zeros(2, 3), expected).error is None
    assert check_structure([torch.zeros(2, 3)], expected).error_kind == "shape"
    assert check_structure((torch.zeros(2, 3), torch.zeros(1)), expected).error_kind == "shape"
    assert check_structure(torch.zeros(3, 2), expected).error_kind == "shape"
    assert check_structure(torch.zeros(2, 3, dtype=torch.float64), expected).error_kind == "dtype"
    lazy = check_structure(torch.zeros(1, 3).expand(2, 3), expected)
    assert lazy.flags == ["non_dense_output"] and lazy.error is None

    class Sub(torch.Tensor):
        pass

    sub = check_structure(torch.zeros(2, 3).as_subclass(Sub), expected)
    assert sub.flags == ["tensor_subclass_output"] and type(sub.outputs[0]) is torch.Tensor


def test_density_and_aliasing() -> None:
    x = torch.randn(4, 4)
    assert is_dense(x) and is_dense(x.t()) and not is_dense(x[:, :2]) and not is_dense(torch.zeros(1).expand(5))
    model = torch.nn.Linear(4, 4)
    assert aliases_anything([x.clone()], [x], model) == []
    assert aliases_anything([x[1:]], [x], model) == ["output 0 shares memory with input 0"]
    assert aliases_anything([model.weight.detach()], [x], model) == ["output 0 shares memory with parameter weight"]
    y = torch.randn(8)
    assert aliases_anything([y[:4], y[4:]], [x], model)[0] == "output 0 shares memory with output 1"


def test_same_values_treats_nan_as_equal() -> None:
    a = torch.tensor([1.0, float("nan")])
    assert same_values(a, a.clone()) and not same_values(a, torch.tensor([1.0, 2.0]))


def test_op_recording_and_families() -> None:
    a = torch.randn(4, 4)
    ref_ops = record_ops(lambda: torch.matmul(a, a))
    assert "mm" in ref_ops
    assert shared_reference_ops(ref_ops, record_ops(lambda: torch.nn.functional.linear(a, a))) == ["matmul (mm)"]
    assert shared_reference_ops(ref_ops, record_ops(lambda: (a[:, :, None] * a[None]).sum(1))) == []
    soft = record_ops(lambda: torch.softmax(a, -1))
    assert shared_reference_ops(soft, soft) == ["softmax (_softmax)"]


def test_namespace_snapshot_detects_and_restores() -> None:
    snap = NamespaceSnapshot.take()
    real_clock, real_relu = time.perf_counter, torch.relu
    try:
        time.perf_counter = lambda: 0.0  # type: ignore[assignment]
        torch.relu = lambda x: x  # type: ignore[assignment]
        report = snap.check_and_restore()
        assert report.timer == ["time.perf_counter"] and report.torch == ["torch.relu"]
        assert time.perf_counter is real_clock and torch.relu is real_relu
        assert snap.check_and_restore().timer == []
    finally:
        time.perf_counter, torch.relu = real_clock, real_relu  # type: ignore[assignment]


def test_precision_state_notices_tf32() -> None:
    apply_tf32(Tf32Setting(False, False))
    before = read_precision_state()
    torch.backends.cuda.matmul.allow_tf32 = True
    assert read_precision_state() != before
    apply_tf32(Tf32Setting(False, False))
    assert read_precision_state() == before


def test_request_defaults_and_validation() -> None:
    req = parse_request({"op": "eval", "problem": "/p.py", "candidate": "/c.py"})
    assert req.seeds == [1, 2, 3, 4, 5] and req.init_seed == 42 and req.atol == 1e-4
    assert req.timing is not None and req.timing.runs == 30 and req.timing.l2_flush
    assert req.baselines == ["eager"] and req.cache_dir is None and req.allow_tf32 is False
    assert parse_request({"op": "check_task", "problem": "/p.py", "timing": None}).timing is None
    for bad in ({"op": "eval", "problem": "/p.py"}, {"op": "eval", "candidate": "/c.py"},
                {"op": "check_task", "problem": "/p.py", "seeds": []},
                {"op": "eval", "problem": "/p", "candidate": "/c", "atol": "x"},
                {"op": "eval", "problem": "/p", "candidate": "/c", "baselines": ["fast"]},
                {"op": "eval", "problem": "/p", "candidate": "/c", "timing": {"runs": 0}}):
        with pytest.raises(RequestError):
            parse_request(bad)


def test_response_shape_and_json_safety() -> None:
    resp = Response(ok=True, max_abs_err=math.inf, trials=[Trial(1, 0.5, math.nan, False)])
    data: Dict[str, Any] = json_safe(resp.to_dict())
    assert data["max_abs_err"] is None and data["trials"][0] == {"seed": 1, "max_abs_err": 0.5,
                                                                 "max_rel_err": None, "pass": False}


def test_summary_statistics() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median_ms, s.mean_ms, s.runs) == (3.0, 3.0, 5)
    assert s.p10_ms == pytest.approx(1.4) and s.p90_ms == pytest.approx(4.6)
    assert hides_device_work([1.0] * 10, [0.2] * 10) and not hides_device_work([0.01] * 10, [0.2] * 10)


def test_a_wait_s_own_cost_is_not_hidden_work() -> None:
    """A 5 us kernel timed where each device-wide wait costs 26 us (an H100 host, call 70) hides
    nothing once the reference's wait is subtracted; 0.2 ms of work on another stream still shows."""
    wait, tiny = [0.026] * 10, [0.005] * 10
    assert hides_device_work(wait, tiny)  # the wait's cost alone, read as hidden work
    assert not hides_device_work(wait, tiny, wait_ms=0.026)
    assert hides_device_work([0.226] * 10, tiny, wait_ms=0.026)


def test_the_device_is_held_between_the_flush_and_the_start_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start event waits behind a calibrated device-side sleep, so that the host's way to the
    call's first launch is not counted, whatever its speed (call 54 on the H200)."""
    from mblast_worker import guards, timing

    log: list = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            self.name = f"event{len([e for e in log if e[0] == 'new'])}"
            log.append(("new", self.name))

    monkeypatch.setattr(guards, "cuda_synchronize", lambda device=None: log.append(("sync",)))
    monkeypatch.setattr(guards, "cuda_event_cls", Event)
    monkeypatch.setattr(guards, "cuda_event_record", lambda e: log.append(("record", e.name)))
    monkeypatch.setattr(guards, "cuda_event_synchronize", lambda e: None)
    monkeypatch.setattr(guards, "cuda_event_elapsed", lambda a, b: 0.5)  # 1e6 cycles in 0.5 ms
    monkeypatch.setattr(guards, "cuda_sleep", lambda cycles: log.append(("sleep", cycles)))
    timer = timing.CudaTimer.__new__(timing.CudaTimer)
    timer.device, timer._flush, timer._lead_cycles = torch.device("cpu"), None, None

    m = timer.measure(lambda: log.append(("call",)) or 7)
    assert m.result == 7 and m.ms == 0.5
    lead = int(1_000_000 * timing.HOST_LEAD_US / 500.0)
    tail = [e for e in log if e[0] in ("sleep", "record", "call")][-4:]
    assert tail[0] == ("sleep", lead) and tail[1][0] == "record" and tail[2] == ("call",)
    calibrations = [e for e in log if e == ("sleep", 1_000_000)]
    timer.measure(lambda: None)
    assert [e for e in log if e == ("sleep", 1_000_000)] == calibrations  # calibrated once
    assert timing.cycles_for(100.0, 0.0, 1000) == 0

    monkeypatch.setattr(guards, "cuda_sleep", None)  # a PyTorch without the sleep kernel
    assert timing.lead_cycles(torch.device("cpu")) == 0


def test_speed_of_light_flags_a_candidate_only_where_eager_respects_the_ceiling() -> None:
    from types import SimpleNamespace

    from mblast_worker.evaluate import _speed_of_light_flag

    def flags(sol: float, cand: float, ref: float, device: str = "cuda") -> list:
        s = SimpleNamespace(resp=Response(sol_ms=sol, cand_ms=cand, ref_ms=ref), device=torch.device(device))
        _speed_of_light_flag(s)  # type: ignore[arg-type]
        return s.resp.flags

    assert flags(1.0, 0.5, 2.0) == ["beyond_speed_of_light"]
    assert flags(1.0, 0.95, 2.0) == []  # within 10 % of the ceiling
    assert flags(1.0, 0.5, 0.8) == []  # eager below the ceiling: the ceiling is wrong
    # A CPU's ceilings are a rough calibration: only a candidate at under half of them is flagged.
    assert flags(1.0, 0.7, 2.0, "cpu") == []
    assert flags(1.0, 0.4, 2.0, "cpu") == ["beyond_speed_of_light"]


def test_speed_of_light_trusts_eager_s_fastest_runs_not_its_median() -> None:
    """On a busy host eager's median rose above an estimate its best runs beat: a problem judged
    against itself was flagged once in CI-like load. Eager's p10 decides."""
    from types import SimpleNamespace

    from mblast_worker.evaluate import _speed_of_light_flag
    from mblast_worker.response import TimingStats

    def flags(sol: float, cand: float, ref_median: float, ref_p10: float) -> list:
        stats = TimingStats(median_ms=ref_median, mean_ms=ref_median, p10_ms=ref_p10, p90_ms=ref_median,
                            stdev_ms=0.0, runs=5)
        s = SimpleNamespace(resp=Response(sol_ms=sol, cand_ms=cand, ref_ms=ref_median, timing={"ref": stats}),
                            device=torch.device("cuda"))
        _speed_of_light_flag(s)  # type: ignore[arg-type]
        return s.resp.flags

    assert flags(0.32, 0.25, 0.33, 0.11) == []  # eager's best runs beat the estimate
    assert flags(0.32, 0.25, 0.40, 0.35) == ["beyond_speed_of_light"]


def test_sol_uses_the_tf32_peak_where_tf32_is_on() -> None:
    from mblast_worker.costmodel import sol_ms
    from mblast_worker.request import DeviceCeilings

    ceilings = DeviceCeilings(bandwidth_gbs=1e9, peak_tflops=50.0, peak_tflops_tf32=400.0)
    assert sol_ms(4e12, 0, ceilings) == pytest.approx(80.0)
    assert sol_ms(4e12, 0, ceilings, tf32=True) == pytest.approx(10.0)


def test_each_arithmetic_unit_runs_at_its_own_peak() -> None:
    """PyTorch's defaults: cuDNN convolutions in TF32, cuBLAS fp32 matrix products not (a square fp32
    matmul judged on the H200 never beat the fp32 peak; convolutions read up to 2.3x "beyond" it,
    session 22). The driver divides by the effective rate."""
    from mblast_worker.costmodel import effective_peak_tflops, sol_ms, unit_peaks
    from mblast_worker.request import DeviceCeilings

    ceilings = DeviceCeilings(bandwidth_gbs=1e9, peak_tflops=50.0, peak_tflops_tf32=400.0,
                              peak_tflops_bf16=800.0)
    peaks = unit_peaks(ceilings, "float32", conv_tf32=True, matmul_tf32=False)
    assert peaks == {"conv": 400.0, "matmul": 50.0, "other": 50.0}
    assert unit_peaks(ceilings, "bfloat16", False, False) == {"conv": 800.0, "matmul": 800.0, "other": 50.0}
    by_unit = {"conv": 4e12, "matmul": 4e12}
    assert sol_ms(8e12, 0, ceilings, tf32=True, flops_by_unit=by_unit, matmul_tf32=False) == pytest.approx(90.0)
    assert sol_ms(8e12, 0, ceilings, tf32=True, flops_by_unit=by_unit, matmul_tf32=True) == pytest.approx(20.0)
    assert effective_peak_tflops(by_unit, peaks) == pytest.approx(8e12 / 90e-3 / 1e12)
    assert effective_peak_tflops({}, peaks) is None


def _reference_models(model: torch.nn.Module) -> Any:
    from mblast_worker.reference import ReferenceModels, pristine_copier

    return ReferenceModels("problem.py", pristine_copier(model, lambda: model), lambda: None, torch.device("cpu"))


def test_batch_chunked_reference_equals_the_whole_one() -> None:
    from mblast_worker.facts import compare_streamed
    from mblast_worker.reference import BATCH_CHUNKS, WHOLE, ReferencePlan, iter_reference

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.GELU())
    x = torch.randn(10, 16)
    models = _reference_models(model)
    cand = model(x).detach()
    whole = compare_streamed([cand], iter_reference(models, ReferencePlan(WHOLE), [x], 1), BASE, 1e-4)
    plan = ReferencePlan(BATCH_CHUNKS, chunks=3, batch=10)
    assert [sl for sl, _ in iter_reference(models, plan, [x], 1)] == [slice(0, 4), slice(4, 8), slice(8, 10)]
    chunked = compare_streamed([cand], iter_reference(models, plan, [x], 1), BASE, 1e-4)
    assert chunked[0].max_abs == pytest.approx(whole[0].max_abs, abs=1e-12)
    assert chunked[0].rel_l2 == pytest.approx(whole[0].rel_l2, rel=1e-9)


def test_separability_tells_per_sample_models_from_batch_statistics() -> None:
    from types import SimpleNamespace

    from mblast_worker.facts import _separable

    torch.manual_seed(0)
    x = torch.randn(8, 4, 6, 6)
    per_sample = SimpleNamespace(models=_reference_models(torch.nn.Conv2d(4, 4, 3)))
    batch_stats = SimpleNamespace(models=_reference_models(torch.nn.BatchNorm2d(4)))  # training mode
    assert _separable(per_sample, [x], 8, 1)  # type: ignore[arg-type]
    assert not _separable(batch_stats, [x], 8, 1)  # type: ignore[arg-type]
    assert not _separable(per_sample, [x], 1, 1)  # type: ignore[arg-type]


def test_state_snapshot_sees_an_in_place_change_without_copying() -> None:
    from mblast_worker.tensors import changed_state, state_snapshot

    model = torch.nn.Linear(4, 4)
    snap = state_snapshot(model)
    assert changed_state(model, snap) == []
    with torch.no_grad():
        w = model.weight.view(-1)
        w[0], w[1] = w[1].clone(), w[0].clone()  # values only move: sums stay, positions do not
    assert changed_state(model, snap) == ["weight"]


def test_candidate_and_eager_run_under_the_same_precision_unless_tf32_is_allowed() -> None:
    """The 0.32x of a convolution problem judged against itself on the H200: the candidate ran with
    cuDNN TF32 off while eager kept PyTorch's default (on)."""
    from mblast_worker.guards import EAGER_DEFAULT_TF32, STRICT_FP32, precision_settings

    cand, eager = precision_settings(strict=False, allow_tf32=False)
    assert cand == eager == EAGER_DEFAULT_TF32
    cand, eager = precision_settings(strict=True, allow_tf32=False)
    assert cand == eager == STRICT_FP32
    cand, eager = precision_settings(strict=False, allow_tf32=True)
    assert eager == EAGER_DEFAULT_TF32 and cand.matmul and cand.cudnn


def test_torch_cpu_baseline_is_the_faster_thread_count_and_restores_it() -> None:
    from mblast_bundle.bundles import _time_torch, _usable_cpus
    before = torch.get_num_threads()
    timing, threads = _time_torch(torch.nn.Softmax(dim=1), [torch.randn(8, 64)], 5)
    assert threads in (before, _usable_cpus()) and timing["runs"] == 5 and timing["median_ms"] > 0
    assert torch.get_num_threads() == before


def test_phase_peaks_include_nested_phases_and_what_ran_between() -> None:
    # A fake allocator: each read returns the peak since the previous read, as memory.take_window does.
    windows = iter([5, 7, 30, 2, 9, 4, 11])
    phases = Phases(peak_reader=lambda: next(windows))
    with phases.phase("load"):  # entering: 5 (before any phase, dropped)
        with phases.phase("prepare"):  # entering: 7 (load so far)
            pass  # leaving: 30
        # leaving load: 2
    with phases.phase("trials"):  # entering: 9 (between phases, dropped)
        pass  # leaving: 4
    assert phases.peak_bytes() == {"load/prepare": 30, "load": 30, "trials": 4}
    assert Phases().peak_bytes() is None


def test_same_values_across_chunks() -> None:
    a = torch.zeros(CHUNK_ELEMENTS * 2 + 5)
    a[CHUNK_ELEMENTS + 3] = float("nan")
    b = a.clone()
    assert same_values(a, b)
    b[-1] = 1.0  # a difference in the last, partial chunk only
    assert not same_values(a, b)
    assert not same_values(torch.arange(10), torch.arange(10).flip(0))


class _KeepsHidden(torch.nn.Module):
    """Feeds its last result back as state, as KernelBench's level 3 RNNs do."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.hidden = torch.zeros(2, 4)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.hidden = torch.tanh(self.lin(x + self.hidden))
        return self.hidden * 2


def test_state_history_is_dropped_and_values_kept() -> None:
    model = _KeepsHidden()
    with torch.enable_grad():  # whatever an earlier test left as the global mode
        out = model(torch.ones(2, 4))
    assert model.hidden.grad_fn is not None  # the next call would chain onto this graph
    before = model.hidden.clone()
    assert drop_state_history(model) == 1
    assert model.hidden.grad_fn is None and torch.equal(model.hidden, before)
    assert model.lin.weight.requires_grad  # parameters untouched
    assert drop_state_history(model) == 0
    kept = detached((out, [out]))
    assert kept[0].grad_fn is None and kept[1][0].grad_fn is None and type(kept[1]) is list


def test_output_snapshots_compare_values_of_views_with_gaps() -> None:
    base = torch.arange(24.0).reshape(4, 6)
    view = base[:, ::2]  # not dense: a clone of it is laid out anew
    assert view.clone().stride() != view.stride()
    early = output_snapshot([view])
    assert same_outputs(early, [contiguous_values(view)])
    dense = torch.ones(3, 3)
    assert contiguous_values(dense).data_ptr() == dense.data_ptr()  # compared without a copy
    base[0, 0] = -1.0  # written after the first read, as work left on a side stream would
    assert not same_outputs(early, [contiguous_values(view)])


def test_warm_imports_load_the_compiler_stack_where_torch_has_one() -> None:
    from mblast_worker import device

    device.warm_imports()  # never raises, with or without torch.compile
    if hasattr(torch, "compile"):
        assert "torch._dynamo" in sys.modules and "torch._inductor.compile_fx" in sys.modules
    else:
        assert "torch._dynamo" not in sys.modules


def test_a_ceiling_is_the_fastest_of_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The speed of light must bound what the device reaches: a median lets the reference run
    # faster than it (H100, call 100).
    times = iter([5.0, 2.0, 4.0, 3.0])

    class Timer:
        def measure(self, fn: Any) -> Any:
            fn()
            return SimpleNamespace(ms=next(times))

    monkeypatch.setattr(ceilings, "make_timer", lambda device, l2_flush: Timer())
    calls = []
    assert ceilings._best_ms(torch.device("cpu"), lambda: calls.append(1), 4) == 2.0
    assert len(calls) == 5  # one warm-up call, then the timed ones


def test_moved_bytes_count_each_ops_reads_and_writes_and_no_views() -> None:
    x, w = torch.randn(100, 100), torch.randn(100, 100)
    size = x.numel() * x.element_size()
    assert count_moved_bytes(lambda: torch.relu(x)) == 2 * size
    assert count_moved_bytes(lambda: x.view(-1)) == count_moved_bytes(lambda: x.t()) == 0
    assert count_moved_bytes(lambda: x.clone().relu_()) == 4 * size  # clone, then relu_ in place
    assert count_moved_bytes(lambda: torch.add(x, x, out=torch.empty_like(x))) == 3 * size  # out= is not read
    # An unfused chain moves its intermediate twice more than a fused one would.
    assert count_moved_bytes(lambda: torch.relu(x @ w) + 1) == 7 * size



def _conv_epilogue() -> Any:
    x, conv = torch.randn(2, 3, 8, 8), torch.nn.Conv2d(3, 4, 3)
    calls = []

    def forward() -> Any:
        calls.append(1)
        with torch.no_grad():
            return torch.relu(conv(x)) * 2

    return forward, calls


def test_reference_counts_come_from_one_forward_and_equal_each_count_alone() -> None:
    forward, calls = _conv_epilogue()
    together = ProblemFacts(key="k")
    facts_module._dispatch_counts(together, forward)
    assert len(calls) == 1
    apart = ProblemFacts(key="k")
    facts_module._dispatch_counts_apart(apart, forward)
    assert len(calls) == 4
    assert together.ref_ops == apart.ref_ops == sorted(record_ops(forward))
    assert "convolution" in together.ref_ops and "relu" in together.ref_ops
    assert together.flops_by_unit == apart.flops_by_unit and together.flops_by_unit["conv"] > 0
    assert together.moved_bytes == apart.moved_bytes == count_moved_bytes(forward) > 0
    assert together.notes == apart.notes == []


def test_a_failing_count_costs_only_its_own_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            raise ValueError("no rule for this op")

    monkeypatch.setattr(facts_module, "flop_counter", lambda: (Broken(), lambda: {}))
    monkeypatch.setattr(facts_module, "count_flops_by_unit", lambda call: Broken().__torch_dispatch__(None, None))
    forward, calls = _conv_epilogue()
    facts = ProblemFacts(key="k")
    facts_module._dispatch_counts(facts, forward)
    assert facts.notes == ["FLOP counting failed: ValueError: no rule for this op"]
    assert "convolution" in facts.ref_ops and facts.moved_bytes == count_moved_bytes(forward)
    assert facts.flops_by_unit == {} and facts.flops is None


@pytest.mark.parametrize("numel", [0, 1, 254, 255, 256, 1000, 4 * 255])
def test_count_true_counts_as_count_nonzero_does(numel: int) -> None:
    torch.manual_seed(numel)
    mask = torch.rand(numel) > 0.3
    assert int(count_true(mask)) == int(torch.count_nonzero(mask))
    grid = torch.rand(40, 30) > 0.5
    assert int(count_true(grid.t())) == int(torch.count_nonzero(grid))  # not contiguous


def test_count_true_makes_no_int64_copy_of_the_mask() -> None:
    # Why it exists: a bool sum to int64 allocates 8 bytes an element first (what tipped the GPU's
    # comparison over its memory bound by a float64 chunk: torch.count_nonzero sums so on CUDA).
    from torch.profiler import ProfilerActivity, profile

    mask = torch.rand(1 << 20) > 0.5

    def allocated(fn: Any) -> int:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
        return max((e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0), default=0)

    assert allocated(lambda: mask.sum()) >= 8 * mask.numel()
    assert allocated(lambda: count_true(mask)) <= mask.numel() // 16
