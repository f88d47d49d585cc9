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
