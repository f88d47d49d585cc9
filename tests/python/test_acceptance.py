"""The acceptance run's own rules (benchmarks/h200/acceptance.py): KernelBench harness times stored
by an earlier call are reused only on the GPU model that measured them (an H200's times read 40 %
fast on an H100 and would fail the agreement check for the wrong reason), and the fairness
summary's percentiles stay within the measured speedups."""

import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))

import acceptance  # noqa: E402


def record(problem: str, hardware: str, seconds: float) -> str:
    return json.dumps({"problem": f"{problem}.py", "ref_runtime": 3.05, "seconds": seconds,
                       "metadata": {"hardware": hardware, "device": "0"}})


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "stored.jsonl"
    path.write_text("\n".join([record("19_ReLU", "NVIDIA H200", 80.0),
                               record("23_Softmax", "NVIDIA H100 80GB HBM3", 85.0),
                               record("row_softmax", "NVIDIA H200", 0.4)]) + "\n")
    monkeypatch.setattr(acceptance, "STORED_HARNESS", path)
    return path


def test_only_the_same_gpu_models_slow_records_are_reused(stored: Path) -> None:
    assert list(acceptance.stored_harness("NVIDIA H200")) == ["19_ReLU"]
    found = acceptance.stored_harness("NVIDIA H100 80GB HBM3")
    assert list(found) == ["23_Softmax"] and found["23_Softmax"]["reused"] is True


def test_nothing_is_reused_when_the_gpu_is_unknown(stored: Path) -> None:
    assert acceptance.stored_harness("") == {}


def test_the_fairness_percentiles_stay_within_the_measured_speedups() -> None:
    spread = acceptance.spread_of([1.0002, 1.0017, 1.0102])
    assert spread["min"] <= spread["p5"] <= spread["median"] <= spread["p95"] <= spread["max"]
    assert spread["max"] == 1.0102 and spread["p95"] < 1.0102
    assert acceptance.spread_of([0.99])["p95"] == 0.99


def test_a_section_cut_by_the_deadline_reads_incomplete_unless_something_was_outside() -> None:
    assert acceptance.section_verdict({"pass": True, "complete": False}) == "INCOMPLETE"
    assert acceptance.section_verdict({"pass": False, "complete": False}) == "FAIL"
    assert acceptance.section_verdict({"pass": True, "complete": True}) == "PASS"
    assert acceptance.section_verdict({}) == "n/a"


def test_the_table_fails_fairness_only_for_a_problem_outside_the_range() -> None:
    fairness = {"judged": 9, "in_range": 9, "outliers": [], "min": 0.995, "p5": 0.995, "median": 1.0,
                "p95": 1.003, "max": 1.003}
    assert "| INCOMPLETE |" in acceptance.table({"fairness": fairness})
    fairness.update(in_range=8, outliers=[{"name": "level1/19_ReLU", "speedup": 1.2}])
    assert "| FAIL |" in acceptance.table({"fairness": fairness})


def test_a_spread_over_fewer_runs_than_five_already_fails_when_it_is_too_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    class ShortRun:
        kernelbench = Path("/nonexistent")
        work = Path("/nonexistent")

        def __init__(self) -> None:
            self.calls = 0

        def left(self) -> float:
            return 100.0 if self.calls < 3 else 0.0

        def eval(self, *args: object, **kwargs: object) -> dict:
            self.calls += 1
            return {"speedup": [8.0, 8.4, 8.1][self.calls - 1]}

    monkeypatch.setattr(acceptance, "first", lambda rec: rec)
    out = acceptance.section_spread(ShortRun())
    assert out["complete"] is False and out["pass"] is False
    assert acceptance.section_verdict(out) == "FAIL"
