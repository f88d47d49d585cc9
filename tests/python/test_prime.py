"""The prime op: the candidate's first call only, so that its lazy compilation fills the compile
caches a later eval starts from (the driver's prebuild, `optimize --prebuild`). Nothing is judged:
no verdict, no timing, no trials beyond that one call."""

from pathlib import Path

from conftest import cpu_candidate, eval_request, evaluate, problem, run_worker


def prime_request(candidate: str, **overrides: object) -> dict:
    req = eval_request(problem("relu_small"), candidate, **overrides)
    req["op"] = "prime"
    return req


def test_a_prime_calls_the_candidate_once_and_judges_nothing(tmp_path: Path) -> None:
    resp = evaluate(prime_request(cpu_candidate("correct_relu")), tmp_path)
    assert resp["ok"] is True and resp["primed"] is True
    assert resp["correct"] is None and resp["error"] is None
    assert resp["trials"] == [] and resp["cand_ms"] is None and resp["speedup"] is None
    assert "trials/first_call" not in resp["phase_seconds"] and "first_call" in resp["phase_seconds"]
    assert not any(name.startswith("timing") for name in resp["phase_seconds"])


def test_a_candidate_that_raises_is_not_primed(tmp_path: Path) -> None:
    resp = evaluate(prime_request(cpu_candidate("broken_candidate")), tmp_path)
    assert resp["primed"] is None and resp["correct"] is None
    assert resp["error_kind"] is not None and resp["error"]


def test_a_prime_needs_a_candidate(tmp_path: Path) -> None:
    req = prime_request(cpu_candidate("correct_relu"))
    del req["candidate"]
    run = run_worker(req, tmp_path)
    assert run.response is not None and "candidate" in (run.response["error"] or "")


def test_a_prime_calls_the_candidate_in_the_grad_mode_of_the_evals_timing(tmp_path: Path) -> None:
    """A graph compiled in another grad mode is another cache entry: the prime calls the candidate
    as the eval will, recording autograd where the timing asks for it."""
    probe = cpu_candidate("needs_grad_mode")
    recording = evaluate(prime_request(probe, timing={"runs": 1, "warmup": 0, "autograd": True}), tmp_path / "a")
    assert recording["primed"] is True, recording["error"]
    not_recording = evaluate(prime_request(probe, timing={"runs": 1, "warmup": 0, "autograd": False}), tmp_path / "b")
    assert not_recording["primed"] is None
    assert "without autograd recording" in (not_recording["error"] or "")
