"""benchmarks/prebuild_guesses.py: each --prebuild guess beside the step it was made for. A guess
counts as judged only where the step's candidate has the guessed text's stem (a guess without the
CUDA graph its step was judged in is not), and only those enter the wall comparison."""

import json
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import prebuild_guesses  # noqa: E402


def write_run(batch: Path, name: str, steps: list, guesses: list) -> None:
    run = batch / "runs" / name
    (run / "prebuild").mkdir(parents=True)
    lines = [json.dumps({"step": n, "technique": t, "candidate": f"s{n:03d}-{stem}-0123456789ab.py",
                         "speedup": speedup, "seconds": seconds}) for n, t, stem, speedup, seconds in steps]
    (run / "steps.jsonl").write_text("\n".join(lines) + "\n{\"torn\n")
    for n, stem in guesses:
        (run / "prebuild" / f"s{n:03d}-{stem}-ba9876543210.py").write_text("")


def test_guesses_are_matched_to_their_steps_and_the_control(tmp_path: Path) -> None:
    prebuild, control = tmp_path / "b", tmp_path / "a"
    compile_, graph = "cuda/builtin-torch-compile", "cuda/builtin-cuda-graph"
    write_run(prebuild, "p1", [(1, graph, "cuda_graph", 2.0, 2.0), (2, compile_, "torch_compile+cuda_graph", 3.0, 9.0),
                               (3, "cuda/builtin-tf32", "tf32", None, 4.0)],
              [(2, "torch_compile"), (2, "torch_compile-inner"), (3, "tf32")])
    write_run(control, "p1", [(1, graph, "cuda_graph", 2.0, 2.0), (2, compile_, "torch_compile+cuda_graph", 3.0, 8.0),
                              (3, "cuda/builtin-tf32", "tf32", None, 3.0)], [])
    lines = prebuild_guesses.compare(prebuild, control)
    rows = [line for line in lines if line.startswith("| p1")]
    assert len(rows) == 2
    assert "no: torch_compile+cuda_graph" in rows[0] and "| yes |" in rows[1]
    assert lines[-1].startswith("2 guesses; 1 judged as guessed")
    assert "step wall 4.0 s with --prebuild, 3.0 s without" in lines[-1]


def test_a_folder_without_runs_is_refused(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    assert prebuild_guesses.main([str(tmp_path), str(tmp_path)]) == 2
    assert "no runs/ folder" in capsys.readouterr().err
