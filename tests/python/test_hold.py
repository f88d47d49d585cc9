"""A held eval (the request's "hold", the driver's prebuild): the worker reports "held" after the
candidate's first call and waits; "go" lets the same process judge the candidate as any eval, the
end of its input ends it without an answer."""

import json
import subprocess
from pathlib import Path
from typing import List

from conftest import cpu_candidate, eval_request, evaluate, problem, run_worker, worker_cmd, worker_env


def _held_worker(tmp_path: Path, candidate: str) -> "subprocess.Popen[str]":
    proc = subprocess.Popen(worker_cmd("serve"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=worker_env("cpu"), cwd=str(tmp_path))
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(eval_request(problem("relu_small"), candidate, seeds=[1, 2], hold=True)) + "\n")
    proc.stdin.flush()
    return proc


def _lines_until_held(proc: "subprocess.Popen[str]") -> List[dict]:
    assert proc.stdout is not None
    lines = []
    while not lines or lines[-1].get("progress") != "held":
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        lines.append(json.loads(line))
    return lines


def test_go_lets_the_held_process_judge_its_candidate(tmp_path: Path) -> None:
    proc = _held_worker(tmp_path, cpu_candidate("correct_relu"))
    held = _lines_until_held(proc)
    assert held[0]["ready"] is True
    assert [line.get("progress") for line in held[1:]] == ["prepared", "primed", "held"]
    out, err = proc.communicate("go\n", timeout=120)
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line.get("progress") for line in lines[:-1]] == ["timing", "timed"], out
    resp = lines[-1]
    assert resp["correct"] is True and resp["speedup"] is not None, err[-2000:]
    assert "trials/held" in resp["phase_seconds"]  # the wait, apart from the candidate's own phases
    assert proc.returncode == 0


def test_the_end_of_input_ends_a_held_process_without_an_answer(tmp_path: Path) -> None:
    proc = _held_worker(tmp_path, cpu_candidate("correct_relu"))
    _lines_until_held(proc)
    out, _err = proc.communicate("", timeout=60)
    assert out == "" and proc.returncode == 0


def test_a_candidate_that_fails_its_first_call_answers_before_any_hold(tmp_path: Path) -> None:
    proc = _held_worker(tmp_path, cpu_candidate("broken_candidate"))
    out, _err = proc.communicate(timeout=120)  # nothing to send: it never waits
    lines = [json.loads(line) for line in out.splitlines()]
    assert "held" not in [line.get("progress") for line in lines]
    assert lines[-1]["correct"] is False and lines[-1]["error_kind"] is not None


def test_without_a_driver_to_answer_a_hold_is_no_hold(tmp_path: Path) -> None:
    resp = evaluate(eval_request(problem("relu_small"), cpu_candidate("correct_relu"), seeds=[1], hold=True), tmp_path)
    assert resp["correct"] is True and "trials/held" not in resp["phase_seconds"]


def test_only_an_eval_holds(tmp_path: Path) -> None:
    run = run_worker({"op": "check_task", "problem": problem("relu_small"), "hold": True}, tmp_path)
    assert run.response is not None and "'hold' is for op 'eval' only" in (run.response["error"] or "")
