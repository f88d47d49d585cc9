"""One candidate judged on several problems in one worker (the request's "workloads",
mblast_worker/workloads.py): a SOL-ExecBench problem's workloads."""

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import brief, cpu_candidate, eval_request, evaluate, response_errors, worker_cmd, worker_env

RELU_AT = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn({rows}, 64)]


def get_init_inputs():
    return []
"""

# Correct where its input has at most 32 rows; a wrong answer beyond.
RELU_FOR_SMALL_INPUTS = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) if x.shape[0] <= 32 else x
"""


def _problems(tmp_path: Path, rows: List[int]) -> List[str]:
    paths = []
    for n in rows:
        path = tmp_path / f"relu_{n}.py"
        path.write_text(RELU_AT.format(rows=n))
        paths.append(str(path))
    return paths


def _request(problems: List[str], candidate: str, tmp_path: Path) -> Dict[str, Any]:
    return eval_request(problems[0], candidate, workloads=problems[1:], cache_dir=str(tmp_path / "cache"))


def test_every_workload_is_judged_in_one_request(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [16, 32, 48])
    resp = evaluate(_request(problems, cpu_candidate("correct_relu"), tmp_path), tmp_path / "run")
    assert resp["correct"] is True, brief(resp)
    more = resp["more_workloads"]
    assert [m["correct"] for m in more] == [True, True], [brief(m) for m in more]
    assert all(m["ref_ms"] is not None and m["speedup"] is not None for m in [resp] + more)
    # Each workload's own shapes: the outputs it reported.
    assert [r["outputs"][0]["shape"] for r in [resp] + more] == [[16, 64], [32, 64], [48, 64]]
    # The candidate's ops are recorded once, on the last workload: no call may follow a recording.
    recorded = ["op_recording" in r["phase_seconds"] for r in [resp] + more]
    assert recorded == [False, False, True], recorded


def test_the_first_failing_workload_ends_the_request(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [16, 48, 32])
    resp = evaluate(_request(problems, str(_write(tmp_path, RELU_FOR_SMALL_INPUTS)), tmp_path), tmp_path / "run")
    assert resp["correct"] is True, brief(resp)
    more = resp["more_workloads"]
    assert len(more) == 1 and more[0]["correct"] is False, [brief(m) for m in more]
    assert more[0]["outputs"][0]["shape"] == [48, 64]


def test_a_workload_whose_problem_is_unusable_ends_the_answer_with_its_error(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [16, 32])
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    resp = evaluate(_request([problems[0], str(broken), problems[1]], cpu_candidate("correct_relu"), tmp_path),
                    tmp_path / "run")
    assert resp["correct"] is True, brief(resp)
    assert [m["error_kind"] for m in resp["more_workloads"]] == ["task"], resp["more_workloads"]


def test_workloads_beyond_the_held_budget_are_left_for_another_request(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from mblast_worker import ops, workloads

    monkeypatch.setattr(workloads, "MOST_HELD_BYTES", 1)  # any prepared problem fills it
    problems = _problems(tmp_path, [16, 32])
    resp = ops.handle(_request(problems, cpu_candidate("correct_relu"), tmp_path), "cpu")
    assert not response_errors(resp), response_errors(resp)
    assert resp["correct"] is True and resp["more_workloads"] == [], brief(resp)


def test_serve_reports_each_later_workload_before_judging_it(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [16, 32, 48])
    proc = subprocess.run(worker_cmd("serve"), input=json.dumps(_request(problems, cpu_candidate("correct_relu"),
                                                                         tmp_path)) + "\n",
                          capture_output=True, text=True, env=worker_env("cpu"), cwd=tmp_path, timeout=180)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    events = [line["progress"] for line in lines if "progress" in line and "ok" not in line]
    assert events.count("prepared") == 1, events
    assert [line.get("index") for line in lines if line.get("progress") == "workload"] == [1, 2], events
    assert all(isinstance(line.get("eager_ms"), float) for line in lines if line.get("progress") == "workload")
    # Each workload's candidate is primed (its first call) after its own "workload" line.
    assert events.index("workload") > events.index("primed"), events
    assert lines[-1]["correct"] is True and len(lines[-1]["more_workloads"]) == 2, brief(lines[-1])


def test_workloads_are_for_eval_only() -> None:
    from mblast_worker import ops

    resp = ops.handle({"op": "check_task", "problem": "/p.py", "workloads": ["/q.py"]}, "cpu")
    assert resp["ok"] is False and "'workloads' is for op 'eval' only" in resp["error"], resp["error"]
    resp = ops.handle({"op": "eval", "problem": "/p.py", "candidate": "/c.py", "workloads": ["q.py"]}, "cpu")
    assert resp["ok"] is False and "absolute paths" in resp["error"], resp["error"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "candidate.py"
    path.write_text(text)
    return path


def test_each_workloads_phases_are_its_own(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [16, 32])
    resp = evaluate(_request(problems, cpu_candidate("correct_relu"), tmp_path), tmp_path / "run")
    for judged in [resp] + resp["more_workloads"]:
        phases = judged["phase_seconds"]
        top = sum(s for name, s in phases.items() if "/" not in name and name not in ("other", "total"))
        # "other" is time outside its phases but within its own judging, not the other workload's.
        assert phases["other"] < 0.5 * phases["total"] and phases["total"] >= top, phases


def test_the_problem_against_itself_is_each_workload_against_its_own_file(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [16, 32])
    resp = evaluate(_request(problems, problems[0], tmp_path), tmp_path / "run")
    for judged in [resp] + resp["more_workloads"]:
        assert judged["correct"] is True and "reference_as_candidate" in judged["flags"], brief(judged)
    assert len(resp["more_workloads"]) == 1
