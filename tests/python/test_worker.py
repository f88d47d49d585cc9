"""The worker through its real command line: verdicts, flags, errors, caching."""

import json
import signal
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from conftest import (FAST_TIMING, PROBLEMS, brief, cpu_candidate, eval_request, evaluate, evaluate_many,
                      TEST_DEVICE, problem, run_worker)

GOOD_PROBLEMS = ["relu_small", "matmul_small", "tiny_output", "softmax_small", "sum_reduction_small", "linear_small",
                 "strided_output"]

# id: (problem, candidate, flag that must be raised, expected correct, expected error_kind or None = any failure kind)
CHEATS: Dict[str, Any] = {
    "zero_output_tiny_values": ("tiny_output", "zero_output", "zero_output", False, "mismatch"),
    "zero_output_relu": ("relu_small", "zero_output", "zero_output", False, "mismatch"),
    "pointer_cache": ("relu_small", "pointer_cache", "result_cache", False, None),
    # Passes the first two staleness checks; caught by the refill with permuted values (the third,
    # judged against the second's eager output) and by the changed block.
    "pointer_extremes_cache": ("relu_small", "pointer_extremes_cache", "result_cache", False, None),
    "fingerprint_cache": ("relu_small", "fingerprint_cache", "result_cache", False, "cheat"),
    "sampled_fingerprint_cache": ("relu_small", "sampled_fingerprint_cache", "result_cache", False, "cheat"),
    "patch_timer": ("relu_small", "patch_timer", "timer_patched", False, "cheat"),
    "patch_torch": ("relu_small", "patch_torch", "torch_patched", False, "mismatch"),
    "mutate_input": ("relu_small", "mutate_input", "input_mutated", False, "cheat"),
    "mutate_param": ("linear_small", "mutate_param", "input_mutated", False, None),
    "alias_input": ("relu_small", "alias_input", "output_aliases_input", False, "cheat"),
    "subclass_output": ("relu_small", "subclass_output", "tensor_subclass_output", False, "cheat"),
    "partial_output": ("relu_small", "partial_output", "partial_output", False, None),
    "uninitialized_output": ("relu_small", "uninitialized_output", "uninitialized_output", False, None),
    "calls_reference": ("matmul_small", "calls_reference", "calls_reference_op", True, None),
    "precision_drop_bf16": ("matmul_small", "precision_drop", "precision_drop", False, "mismatch"),
    "precision_drop_tf32_switch": ("matmul_small", "tf32_switch", "precision_drop", False, "cheat"),
}

# id: (problem, candidate, error_kind)
FAILURES: Dict[str, Any] = {
    "wrong_shape": ("relu_small", "wrong_shape", "shape"),
    "wrong_dtype": ("relu_small", "wrong_dtype", "dtype"),
    "nan_output": ("relu_small", "nan_output", "nan_inf"),
    "wrong_values": ("relu_small", "wrong_values", "mismatch"),
    "raises": ("relu_small", "raises", "candidate_runtime"),
    "broken_candidate": ("relu_small", "broken_candidate", "candidate_load"),
    "no_modelnew": ("relu_small", "no_modelnew", "candidate_load"),
    "model_not_modelnew": ("relu_small", "model_not_modelnew", "candidate_load"),
}

# problem: (expected fragment of the error message)
TASK_ERRORS = [
    ("broken_syntax", "SyntaxError at line 7"),
    ("no_get_inputs", "no function get_inputs()"),
    ("no_model", "no class Model"),
    ("init_raises", "Model(*get_init_inputs()) raised ValueError: this model cannot be built"),
    ("inputs_raise", "get_inputs() raised ValueError: no inputs today"),
    ("returns_list", "forward returned list, expected tensor or tuple of tensors"),
]

# eval reports the same task errors as check_task; a few suffice (every one costs a process)
EVAL_TASK_ERRORS = ["broken_syntax", "init_raises", "returns_list"]

# more request validation is unit-tested in test_units.py
BAD_REQUESTS = [
    ({"op": "bogus"}, "unknown op"),
    ({"op": "eval", "problem": "relative/path.py", "candidate": "/x.py"}, "absolute path"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Dict[str, Any]]:
    """Every table-driven evaluation, run concurrently once for the whole module."""
    requests: Dict[str, Dict[str, Any]] = {}
    for key, (prob, cand, *_rest) in {**CHEATS, **FAILURES}.items():
        requests[key] = eval_request(problem(prob), cpu_candidate(cand))
    for prob in GOOD_PROBLEMS:
        requests[f"self:{prob}"] = eval_request(problem(prob), problem(prob))
    requests["correct_relu"] = eval_request(problem("relu_small"), cpu_candidate("correct_relu"))
    requests["uses_helper"] = eval_request(problem("relu_small"), cpu_candidate("uses_helper"))
    for prob, _message in TASK_ERRORS:
        requests[f"check_task:{prob}"] = {"op": "check_task", "problem": problem(prob)}
    for prob in EVAL_TASK_ERRORS:
        requests[f"eval_task:{prob}"] = eval_request(problem(prob), cpu_candidate("correct_relu"), timing=None,
                                                     seeds=[1])
    for n, (body, _fragment) in enumerate(BAD_REQUESTS):
        requests[f"bad_request:{n}"] = body
    requests["strict"] = eval_request(problem("matmul_small"), problem("matmul_small"), timing=None,
                                      tolerance_policy="strict", seeds=[1])
    requests["beyond_sol"] = eval_request(problem("relu_small"), cpu_candidate("correct_relu"), seeds=[1],
                                          device_ceilings={"bandwidth_gbs": 1e-6, "peak_tflops": 1e-9})
    requests["compile"] = eval_request(problem("relu_small"), cpu_candidate("correct_relu"), seeds=[1],
                                       baselines=["eager", "compile"])
    requests["check_task:sum"] = {"op": "check_task", "problem": problem("sum_reduction_small")}
    requests["ceilings"] = {"op": "ceilings", "device": "cpu"}
    return evaluate_many(requests, tmp_path_factory.mktemp("table"))


@pytest.mark.parametrize("case", sorted(CHEATS))
def test_cheat_is_flagged(results: Dict[str, Dict[str, Any]], case: str) -> None:
    _prob, _cand, flag, correct, kind = CHEATS[case]
    resp = results[case]
    assert resp["ok"] is True
    assert flag in resp["flags"], brief(resp)
    assert resp["correct"] is correct, brief(resp)
    if correct:
        assert resp["error_kind"] is None and resp["error"] is None
    else:
        assert resp["error"]
        if kind is not None:
            assert resp["error_kind"] == kind, brief(resp)


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failure_kind(results: Dict[str, Dict[str, Any]], case: str) -> None:
    _prob, cand, kind = FAILURES[case]
    resp = results[case]
    assert resp["ok"] is True
    assert resp["correct"] is False
    assert resp["error_kind"] == kind, brief(resp)
    if kind in ("shape", "dtype", "candidate_runtime", "candidate_load"):
        assert cand in resp["error"]  # errors name the file


def test_candidate_errors_carry_cause(results: Dict[str, Dict[str, Any]]) -> None:
    assert "SyntaxError at line 5" in results["broken_candidate"]["error"]
    assert "no class ModelNew" in results["no_modelnew"]["error"]
    raised = results["raises"]
    assert "RuntimeError: kernel launch failed" in raised["error"]
    assert "Traceback" in raised["traceback"]
    assert "has shape [16, 63], expected [16, 64]" in results["wrong_shape"]["error"]
    assert "has dtype float64, expected float32" in results["wrong_dtype"]["error"]


@pytest.mark.parametrize("prob", GOOD_PROBLEMS)
def test_problem_verifies_against_itself(results: Dict[str, Dict[str, Any]], prob: str) -> None:
    resp = results[f"self:{prob}"]
    assert resp["correct"] is True, brief(resp)
    assert resp["flags"] == ["reference_as_candidate"], brief(resp)
    assert resp["reference_precision"] == "float64"
    assert [t["pass"] for t in resp["trials"]] == [True, True, True]


def test_correct_candidate_report(results: Dict[str, Dict[str, Any]]) -> None:
    resp = results["correct_relu"]
    assert resp["correct"] is True and resp["flags"] == [] and resp["error"] is None
    assert resp["max_abs_err"] == 0.0 and resp["eager_max_abs_err"] == 0.0
    assert resp["tolerance"] == {"atol": 1e-4, "rtol": 1e-4, "policy": "eager-widened", "widened_by_eager": False,
                                 "matched_ratio": None, "error_cap": None}
    assert resp["outputs"] == [{"shape": [16, 64], "dtype": "float32"}]
    assert resp["min_bytes"] == resp["moved_bytes"] == 2 * 16 * 64 * 4  # one op: reads x, writes y
    assert resp["input_bytes"] == resp["output_bytes"] == 16 * 64 * 4  # what a graph copies in and out
    assert resp["copied_tensors"] == 2  # x in, y out: the copies a graph's replay launches
    assert [t["seed"] for t in resp["trials"]] == [1, 2, 3]
    assert resp["ref_ms"] > 0 and resp["cand_ms"] > 0
    assert resp["speedup"] == pytest.approx(resp["ref_ms"] / resp["cand_ms"])
    for who in ("ref", "cand"):
        stats = resp["timing"][who]
        assert stats["runs"] == FAST_TIMING["runs"]
        assert stats["p10_ms"] <= stats["median_ms"] <= stats["p90_ms"]
    assert resp["sol_ms"] is None  # no device ceilings given
    assert resp["device_name"] and resp["torch_version"]


def test_candidate_directory_is_importable(results: Dict[str, Dict[str, Any]]) -> None:
    assert results["uses_helper"]["correct"] is True, results["uses_helper"]


def test_error_location_points_at_a_bad_element(results: Dict[str, Dict[str, Any]]) -> None:
    loc = results["wrong_values"]["err_location"]
    assert loc["output"] == 0 and len(loc["index"]) == 2
    assert loc["cand"] == pytest.approx(loc["ref"] * 1.01, rel=1e-5)


def test_reference_cache_is_used_on_second_run(tmp_path: Path) -> None:
    req = eval_request(problem("softmax_small"), cpu_candidate("correct_relu"), timing=None,
                       cache_dir=str(tmp_path / "cache"))
    req["candidate"] = problem("softmax_small")
    first = evaluate(req, tmp_path)
    second = evaluate(req, tmp_path)
    assert first["reference_cache_hits"] == 0
    assert first["reference_computations"] == 3
    # The three trial seeds' references and eager errors come from the cache the second time.
    assert second["reference_cache_hits"] == 3 and second["reference_computations"] == 0
    assert second["correct"] is True and second["max_abs_err"] == first["max_abs_err"]
    names = [p.name for p in (tmp_path / "cache").iterdir()]
    assert any(n.startswith("ref-") for n in names) and any(n.startswith("facts-") for n in names)


def test_a_repeated_eval_takes_everything_that_depends_on_the_problem_from_the_cache(tmp_path: Path) -> None:
    """The whole eval as the driver sends it (trials, timing, staleness checks), twice with one
    cache_dir: the second computes no float64 reference, and its verdict and errors are the same."""
    req = eval_request(problem("relu_small"), cpu_candidate("correct_relu"), cache_dir=str(tmp_path / "cache"))
    first = evaluate(req, tmp_path / "first")
    second = evaluate(req, tmp_path / "second")
    assert first["correct"] is True and second["correct"] is True
    assert first["reference_computations"] == len(req["seeds"]) and first["reference_cache_hits"] == 0
    assert second["reference_computations"] == 0 and second["reference_cache_hits"] == len(req["seeds"])
    assert second["max_abs_err"] == first["max_abs_err"]
    assert second["eager_max_abs_err"] == first["eager_max_abs_err"]
    assert second["phase_seconds"]["load/prepare"] < first["phase_seconds"]["load/prepare"]
    assert not any("cache" in note for note in first["notes"] + second["notes"])

@pytest.mark.skipif(TEST_DEVICE != "cpu", reason="the memo's key is read on the host: a gain only on the CPU")
def test_a_memo_of_exact_inputs_is_flagged_by_new_inputs(tmp_path: Path) -> None:
    timing = {"runs": 10, "warmup": 2, "input_sets": 2, "l2_flush": False}
    memo = evaluate(eval_request(problem("matmul_medium"), cpu_candidate("exact_memo"), timing=timing), tmp_path / "m")
    assert memo["correct"] is False and "result_cache" in memo["flags"], brief(memo)
    note = next((n for n in memo["notes"] if "inputs it had not seen" in n), None)
    assert note is not None, memo["notes"]
    assert "new inputs [" in note and "seen [" in note, note  # the times the verdict rests on
    plain = evaluate(eval_request(problem("matmul_medium"), problem("matmul_medium"), timing=timing), tmp_path / "p")
    assert plain["correct"] is True and "result_cache" not in plain["flags"], brief(plain)


def test_work_once_per_input_buffer_is_not_taken_for_a_memo(tmp_path: Path) -> None:
    """The probe writes new values into the timed buffers: a candidate that computes every answer
    but is slow on buffers it has not met (CUDA-graph trees' bookkeeping; reduce-overhead was
    flagged so on the GPU, call 106) keeps its gain, and a memo of contents is still caught."""
    timing = {"runs": 10, "warmup": 2, "input_sets": 2, "l2_flush": False}
    setup = evaluate(eval_request(problem("matmul_twice"), cpu_candidate("per_buffer_setup"), timing=timing),
                     tmp_path / "s")
    assert setup["correct"] is True and "result_cache" not in setup["flags"], brief(setup)
    assert setup["speedup"] >= 1.2, brief(setup)  # the probe ran
    memo = evaluate(eval_request(problem("matmul_twice"), cpu_candidate("exact_memo"), timing=timing), tmp_path / "m")
    assert memo["correct"] is False and "result_cache" in memo["flags"], brief(memo)


def test_a_cost_of_the_first_call_after_the_harness_worked_is_not_taken_for_a_memo(tmp_path: Path) -> None:
    """Each timed call of the probe follows an untimed call of the same contender on inputs other
    than the timed ones, as the timed rounds' calls follow one another: a candidate slow only on
    its first call after the judge made new inputs keeps its gain, and a memo still meets the new
    inputs first in the timed call."""
    timing = {"runs": 10, "warmup": 2, "input_sets": 2, "l2_flush": False}
    cold = evaluate(eval_request(problem("matmul_twice"), cpu_candidate("cold_after_new_inputs"), timing=timing),
                    tmp_path / "c")
    assert cold["correct"] is True and "result_cache" not in cold["flags"], brief(cold)
    assert cold["speedup"] >= 1.2, brief(cold)  # the probe ran


def test_the_candidate_runs_in_the_grad_mode_it_is_timed_in(tmp_path: Path) -> None:
    """Timed calls record autograd as KernelBench's harness times them, and every other call of the
    candidate runs in that mode too: a compiled module verified under no_grad compiles a second,
    slower graph for its timing."""
    base = eval_request(problem("relu_small"), cpu_candidate("grad_mode_probe"), profile=True)
    recorded = evaluate(base, tmp_path / "autograd")
    assert recorded["correct"] is True and recorded["speedup"] is not None, brief(recorded)
    assert recorded["signature"] is not None, brief(recorded)
    plain = evaluate(dict(base, timing=dict(FAST_TIMING, autograd=False)), tmp_path / "no_grad")
    assert plain["correct"] is True and plain["speedup"] is not None, brief(plain)


def test_no_timed_call_follows_the_op_recording(tmp_path: Path) -> None:
    """A compiled module called once under a TorchDispatchMode runs eager code from then on: the
    candidate's ops are recorded after its timing, staleness checks and profile."""
    resp = evaluate(eval_request(problem("relu_small"), cpu_candidate("dispatch_mode_probe"), profile=True),
                    tmp_path / "probe")
    assert resp["correct"] is True, brief(resp)
    assert resp["speedup"] > 0.3, brief(resp)  # a 50 ms sleep per call would read about 0.001x
    order = [name for name in resp["phase_seconds"] if "/" not in name]
    assert order.index("op_recording") > max(order.index(p) for p in ("timing", "stale_checks", "profile")), order


def test_phase_seconds_account_for_the_eval(results: Dict[str, Dict[str, Any]]) -> None:
    phases = results["correct_relu"]["phase_seconds"]
    for name in ("load", "load/prepare", "trials", "trials/candidate", "trials/candidate_checks", "timing",
                 "stale_checks", "other", "total"):
        assert name in phases, (name, phases)
    assert all(isinstance(v, float) and v >= 0 for v in phases.values()), phases
    top = sum(v for k, v in phases.items() if "/" not in k and k != "total")
    assert top == pytest.approx(phases["total"], rel=1e-3, abs=1e-3)
    assert phases["trials/candidate"] <= phases["trials"]
    # Every eval response has them, a failed one too; other ops do not.
    assert results["wrong_values"]["phase_seconds"]["trials"] > 0
    assert results["eval_task:broken_syntax"]["phase_seconds"]["load"] >= 0
    assert results["ceilings"]["phase_seconds"] is None


def test_strict_policy_is_reported(results: Dict[str, Dict[str, Any]]) -> None:
    resp = results["strict"]
    assert resp["tolerance"]["policy"] == "strict"
    assert resp["correct"] is True


def test_a_ceiling_that_eager_itself_beats_flags_nothing(results: Dict[str, Dict[str, Any]]) -> None:
    """Absurd ceilings put eager too below the speed of light: the estimate is wrong, not the
    candidate (convolutions in TF32 beat an fp32 ceiling so, on the H200)."""
    resp = results["beyond_sol"]
    assert resp["sol_ms"] is not None and resp["sol_ms"] > 1.0
    assert "beyond_speed_of_light" not in resp["flags"] and resp["correct"] is True, brief(resp)
    assert any("eager itself took" in note for note in resp["notes"]), resp["notes"]


def test_compile_baseline_is_optional(results: Dict[str, Dict[str, Any]]) -> None:
    resp = results["compile"]
    assert resp["correct"] is True, brief(resp)
    if resp["compile_ms"] is None:
        assert any("compile baseline skipped" in n for n in resp["notes"]), resp["notes"]
    else:
        assert resp["speedup_vs_compile"] == pytest.approx(resp["compile_ms"] / resp["cand_ms"])


TASK_ERROR_CASES = [("check_task", prob, msg) for prob, msg in TASK_ERRORS] + [
    ("eval_task", prob, msg) for prob, msg in TASK_ERRORS if prob in EVAL_TASK_ERRORS
]


@pytest.mark.parametrize("op, prob, message", TASK_ERROR_CASES)
def test_bad_problem_is_a_task_error(results: Dict[str, Dict[str, Any]], op: str, prob: str, message: str) -> None:
    resp = results[f"{op}:{prob}"]
    assert resp["ok"] is True
    assert resp["error_kind"] == "task", brief(resp)
    assert message in resp["error"] and str(PROBLEMS / prob) in resp["error"], resp["error"]
    assert resp["correct"] is (False if op == "eval_task" else None)


def test_check_task_describes_outputs(results: Dict[str, Dict[str, Any]]) -> None:
    resp = results["check_task:sum"]
    assert resp["error"] is None and resp["correct"] is None
    assert resp["outputs"] == [{"shape": [4, 1, 16], "dtype": "float32"}]
    assert resp["min_bytes"] == (4 * 256 * 16 + 4 * 16) * 4


def test_ceilings_op_on_cpu(results: Dict[str, Dict[str, Any]]) -> None:
    resp = results["ceilings"]
    assert resp["ok"] is True and resp["error"] is None
    assert resp["bandwidth_gbs"] > 0 and resp["peak_tflops_fp32"] > 0
    assert resp["device_name"]


@pytest.mark.parametrize("n", range(len(BAD_REQUESTS)))
def test_bad_request_is_not_ok(results: Dict[str, Dict[str, Any]], n: int) -> None:
    resp = results[f"bad_request:{n}"]
    assert resp["ok"] is False and resp["error_kind"] is None
    assert BAD_REQUESTS[n][1] in resp["error"]


def test_soft_timeout(tmp_path: Path) -> None:
    resp = evaluate(eval_request(problem("relu_small"), cpu_candidate("hang"), timeout_s=2), tmp_path, timeout=60)
    assert resp["error_kind"] == "timeout" and resp["correct"] is False


def test_hang_is_killed_from_outside(tmp_path: Path) -> None:
    req = eval_request(problem("relu_small"), cpu_candidate("hang"))
    with pytest.raises(subprocess.TimeoutExpired):
        run_worker(req, tmp_path, timeout=5)  # subprocess.run kills the child on timeout


def test_segfault_kills_only_the_worker_run(tmp_path: Path) -> None:
    run = run_worker(eval_request(problem("relu_small"), cpu_candidate("segfault")), tmp_path)
    assert run.returncode == -signal.SIGSEGV
    assert run.response is None
    assert "Fatal Python error" in run.stderr  # faulthandler's stack, for the driver's log


# ---- serve: the protocol the C++ driver speaks ----------------------------------------------------


def _start_serve(tmp_path: Path, device: Optional[str] = "cpu") -> "subprocess.Popen[str]":
    from conftest import worker_cmd, worker_env

    return subprocess.Popen(worker_cmd("serve"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=worker_env(device), cwd=str(tmp_path))


def test_serve_protocol_survives_candidate_prints(tmp_path: Path) -> None:
    proc = _start_serve(tmp_path)
    assert proc.stdout is not None and proc.stdin is not None
    ready = json.loads(proc.stdout.readline())
    assert ready["ready"] is True and ready["pid"] == proc.pid and ready["device"] == "cpu"
    assert ready["torch"] and ready["python"].count(".") == 2 and ready["device_name"]
    req = eval_request(problem("relu_small"), cpu_candidate("noisy_relu"), seeds=[1, 2])
    out, err = proc.communicate(json.dumps(req) + "\n", timeout=120)
    lines = [json.loads(line) for line in out.splitlines()]
    # progress lines (the driver's time limits follow them), then exactly one response; no
    # candidate output
    assert [line.get("progress") for line in lines[:-1]] == ["prepared", "primed", "timing", "timed"], out
    assert lines[0]["eager_ms"] > 0
    resp = lines[-1]
    assert resp["correct"] is True and resp["flags"] == []
    assert proc.returncode == 0
    assert "candidate says hello" in err and "candidate writes raw bytes" in err and "forged" in err


def test_serve_reports_task_errors_on_the_protocol(tmp_path: Path) -> None:
    proc = _start_serve(tmp_path)
    req = {"op": "check_task", "problem": problem("broken_syntax")}
    out, _err = proc.communicate(json.dumps(req) + "\n", timeout=120)
    ready, resp = (json.loads(line) for line in out.splitlines())
    assert ready["ready"] is True
    assert resp["error_kind"] == "task" and "Traceback" not in resp["error"]
    assert proc.returncode == 0


def test_serve_dies_by_signal_on_segfault(tmp_path: Path) -> None:
    proc = _start_serve(tmp_path)
    req = eval_request(problem("relu_small"), cpu_candidate("segfault"))
    out, _err = proc.communicate(json.dumps(req) + "\n", timeout=120)
    assert proc.returncode == -signal.SIGSEGV
    # the ready line and progress only: the driver sees EOF plus a signal
    assert [json.loads(line).get("progress") for line in out.splitlines()[1:]] == ["prepared"], out


def test_serve_answers_garbage_with_not_ok(tmp_path: Path) -> None:
    proc = _start_serve(tmp_path)
    out, _err = proc.communicate("this is not json\n", timeout=120)
    resp = json.loads(out.splitlines()[1])
    assert resp["ok"] is False and "unparseable request" in resp["error"]


def test_references_over_the_size_limit_are_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Huge references (KernelBench level 1: 12.8 GB per seed in float64) are recomputed rather
    than written to disk; the response says so."""
    monkeypatch.setenv("MBLAST_REFERENCE_CACHE_MAX_MB", "0")
    req = eval_request(problem("relu_small"), cpu_candidate("correct_relu"), cache_dir=str(tmp_path / "cache"))
    first = evaluate(req, tmp_path / "first")
    second = evaluate(req, tmp_path / "second")
    assert first["correct"] is True and second["correct"] is True
    assert second["reference_cache_hits"] == 0 and second["reference_computations"] == len(req["seeds"])
    assert any("reference not cached" in note for note in second["notes"]), second["notes"]
    assert not list((tmp_path / "cache").glob("ref-*.pt"))


def test_profile_returns_signatures_for_candidate_and_reference(tmp_path: Path) -> None:
    req = eval_request(problem("matmul_small"), problem("matmul_small"), profile=True,
                       device_ceilings={"bandwidth_gbs": 10.0, "peak_tflops": 0.1})
    resp = evaluate(req, tmp_path)
    assert resp["correct"] is True, resp["error"]
    for key in ("signature", "reference_signature"):
        sig = resp[key]
        assert sig is not None, resp["notes"]
        assert sig["total_ms"] > 0 and sig["kernel_count"] >= 1
        assert any(op["name"] in ("aten::mm", "aten::matmul") for op in sig["ops"]), sig["ops"]
        assert "memory_sol_fraction" not in sig  # the driver's, from the raw figures below
    assert resp["flops"] > 0 and resp["min_bytes"] > 0
    assert resp["phase_seconds"]["profile"] > 0
    plain = evaluate(eval_request(problem("relu_small"), cpu_candidate("correct_relu")), tmp_path / "plain")
    assert plain["signature"] is None and plain["reference_signature"] is None


def test_the_reference_is_profiled_only_where_asked(tmp_path: Path) -> None:
    """optimize takes the first state from the reference judged as a candidate, so it asks for
    no reference profile beside each candidate's."""
    req = eval_request(problem("matmul_small"), problem("matmul_small"), profile=True,
                       profile_reference=False)
    resp = evaluate(req, tmp_path)
    assert resp["correct"] is True, resp["error"]
    assert resp["signature"] is not None and resp["signature"]["kernel_count"] >= 1, resp["notes"]
    assert resp["reference_signature"] is None
