"""benchmarks/merge_batches.py: batches of one level run apart (sample30.sh's halves) become one
batch folder with every run, result and control; batches of another level or other flags, or
sharing a problem, are refused with exit 2 and nothing written."""

import json
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import merge_batches  # noqa: E402

FLAGS = ["--llm", "none", "--time-limit", "0.8"]


def write_batch(folder: Path, level: int, problems: list, flags: list = FLAGS) -> Path:
    for name in problems:
        (folder / "runs" / name).mkdir(parents=True)
        (folder / "runs" / name / "run.json").write_text("{}")
        (folder / "logs").mkdir(exist_ok=True)
        (folder / "logs" / f"{name}.log").write_text(name)
    (folder / "batch.json").write_text(json.dumps({"level": level, "flags": flags, "problems": problems,
                                                   "started_at": f"start-{problems[0]}"}))
    (folder / "results.jsonl").write_text("".join(json.dumps({"task": f"level{level}/{p}"}) + "\n" for p in problems))
    (folder / "baselines.jsonl").write_text(json.dumps({"task": f"level{level}/{problems[0]}",
                                                        "baseline": "torch_compile"}) + "\n\n")
    return folder


def test_two_halves_become_one_batch(tmp_path: Path) -> None:
    a = write_batch(tmp_path / "a", 1, ["1_Matmul", "19_ReLU"])
    b = write_batch(tmp_path / "b", 1, ["47_Sum"])
    out = tmp_path / "merged"
    assert merge_batches.main([str(out), str(a), str(b)]) == 0
    batch = json.loads((out / "batch.json").read_text())
    assert batch["problems"] == ["1_Matmul", "19_ReLU", "47_Sum"] and batch["level"] == 1
    assert [m["started_at"] for m in batch["merged_from"]] == ["start-1_Matmul", "start-47_Sum"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["19_ReLU", "1_Matmul", "47_Sum"]
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    assert len((out / "baselines.jsonl").read_text().splitlines()) == 2  # blank lines dropped
    assert (out / "logs" / "47_Sum.log").read_text() == "47_Sum"


def test_batches_that_do_not_belong_together_are_refused(tmp_path: Path) -> None:
    a = write_batch(tmp_path / "a", 1, ["1_Matmul"])
    cases = {"level": write_batch(tmp_path / "l2", 2, ["12_Gemm"]),
             "flags": write_batch(tmp_path / "f", 1, ["19_ReLU"], FLAGS[:2]),
             "both": write_batch(tmp_path / "again", 1, ["1_Matmul"])}
    for name, other in cases.items():
        out = tmp_path / f"out-{name}"
        assert merge_batches.main([str(out), str(a), str(other)]) == 2
        assert not out.exists()
    assert merge_batches.main([str(tmp_path / "x"), str(tmp_path / "nothing-here")]) == 2


def test_an_existing_output_is_never_written_into(tmp_path: Path) -> None:
    a = write_batch(tmp_path / "a", 1, ["1_Matmul"])
    out = tmp_path / "merged"
    out.mkdir()
    assert merge_batches.main([str(out), str(a)]) == 2
    assert list(out.iterdir()) == []
