"""benchmarks/step_wall.py: a step's overhead is its wall less build, load and first call, and the
summary names the worker's phases by their median over the steps counted (eager under the limit)."""

import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import step_wall  # noqa: E402


def write_run(folder: Path, eager_ms: float, steps: list) -> Path:
    (folder / "candidates").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"baseline_ms": eager_ms}))
    lines = []
    for i, (wall, phases) in enumerate(steps, start=1):
        name = f"s{i:03d}-builtin"
        lines.append(json.dumps({"global_step": i, "technique": "t", "candidate": f"candidates/{name}.py",
                                 "seconds": wall, "outcome": "improved"}))
        (folder / "candidates" / f"{name}.json").write_text(json.dumps({"build_seconds": 0, "phase_seconds": phases}))
    (folder / "steps.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_overhead_and_phases_of_the_counted_steps(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fast = write_run(tmp_path / "fast", 2.0, [
        (5.0, {"load": 0.5, "trials/first_call": 2.0, "stale_checks": 1.0, "timing": 0.4, "total": 4.5}),
        (4.0, {"load": 0.5, "trials/first_call": 1.0, "stale_checks": 2.0, "timing": 0.2, "total": 3.5}),
        (3.0, {"load": 0.5, "trials/first_call": 1.0, "stale_checks": 0.5, "timing": 0.3, "total": 2.8}),
    ])
    slow = write_run(tmp_path / "slow", 50.0, [(60.0, {"load": 1.0, "stale_checks": 50.0, "total": 59.0})])
    assert step_wall.main([str(fast), str(slow)]) == 0
    out = capsys.readouterr().out
    assert "| fast | 1 | t | 2.000 | 5.00 | 0.00 | 0.50 | 2.00 | 2.50 | 0.50 |" in out
    assert "eager < 10 ms: 3; overhead per workload median 2.50 s, max 2.50 s; over 2 s: 2" in out
    phases = out[out.index("| worker phase |"):].splitlines()[2:]
    # Only the three counted steps, largest median first; the slow problem's 50 s is not among them.
    assert phases[0] == "| total | 3 | 3.50 | 4.30 | 4.50 |"
    assert "| stale_checks | 3 | 1.00 | 1.80 | 2.00 |" in phases[1:3]
    assert "| timing | 3 | 0.30 | 0.38 | 0.40 |" in phases


def test_a_step_over_several_workloads_is_split_over_them(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """14 workloads judged in one worker: the later workloads' time is the worker's, not "outside",
    their first calls (a compile per shape) are the candidate's own, and the limit holds per workload."""
    run = write_run(tmp_path / "sol", 0.1, [(16.0, {"load": 0.5, "trials/first_call": 2.0, "total": 3.0})])
    result_file = run / "candidates" / "s001-builtin.json"
    result = json.loads(result_file.read_text())
    first = {"total": 3.0, "load": 0.5, "trials/first_call": 2.0}
    later = {"total": 0.9, "trials/first_call": 0.2}
    result["workloads"] = [{"uuid": "w0", "phase_seconds": first}] + [
        {"uuid": f"w{i}", "phase_seconds": later} for i in range(1, 14)]
    result_file.write_text(json.dumps(result))
    assert step_wall.main([str(run)]) == 0
    out = capsys.readouterr().out
    # load 0.5; first calls 2.0 + 13 x 0.2 = 4.6; overhead 16 - 5.1 = 10.9; worker 3 + 13 x 0.9 = 14.7.
    assert "| sol | 1 | t | 0.100 | 16.00 | 0.00 | 0.50 | 4.60 | 10.90 | 1.30 | 14 |" in out
    assert "overhead per workload median 0.78 s, max 0.78 s; over 2 s: 0" in out


def test_a_step_that_judged_two_candidates_counts_both(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A built-in judged as it is and inside a CUDA graph: both evaluations' load and first call are
    the step's own, the limit holds per evaluation, and the step's candidate (listed last) is one."""
    run = write_run(tmp_path / "graph", 2.0, [(9.0, {"load": 0.5, "trials/first_call": 3.0, "total": 4.0})])
    plain = {"build_seconds": 0, "phase_seconds": {"load": 0.4, "trials/first_call": 2.5, "total": 3.5}}
    (run / "candidates" / "s001-plain.json").write_text(json.dumps(plain))
    step = json.loads((run / "steps.jsonl").read_text())
    step["candidates"] = [{"file": "s001-plain.py", "outcome": "correct"},
                          {"file": "s001-builtin.py", "outcome": "correct"}]
    (run / "steps.jsonl").write_text(json.dumps(step) + "\n")
    assert step_wall.main([str(run)]) == 0
    out = capsys.readouterr().out
    # load 0.9, first calls 5.5, overhead 9 - 6.4 = 2.6 over two evaluations; worker 7.5, outside 1.5.
    assert "| graph | 1 | t | 2.000 | 9.00 | 0.00 | 0.90 | 5.50 | 2.60 | 1.50 | 2 |" in out
    assert "overhead per workload median 1.30 s, max 1.30 s; over 2 s: 0" in out
    assert "| total | 1 | 7.50 | 7.50 | 7.50 |" in out
