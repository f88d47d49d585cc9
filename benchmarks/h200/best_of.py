"""The controls of a batch: each problem's CUDA graph, torch.compile and max-autotune, judged.

    best_of.py --kernelbench DIR --level N --problems 1,19,... --out BATCH_DIR [--mblast PATH]
               [--gpus 0,1,2,3] [--transforms cuda_graph,torch_compile,torch_compile_max_autotune]
               [--timeout S] [--eval-args '--device cpu'] [--reuse-runs]

For every problem the built-in transforms are applied to the reference (`python3 -m
mblast_builtin`) and judged by one `mblast eval --json` on one GPU, the GPUs taking problems in
turn; each result becomes a line of BATCH_DIR/baselines.jsonl ({"task", "baseline", "correct",
"speedup", "cand_ms", "ref_ms", "error"}), which `mblast report BATCH_DIR` reads as the best-of
column: the best of eager and these, measured in the same batch as mblast's own runs.

With --reuse-runs, a control that a run of the batch has already judged (its step applied that
built-in to the reference: BATCH_DIR/runs/<stem>/steps.jsonl, base_depth 0) is taken from that
step instead of being judged again ("source": "run step N"); only the others are judged. The
result is the same judge on the same candidate file in the same batch, for less GPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from builtins_vs_plain import ROOT, make_candidate, num  # noqa: E402
from issue3_tools import run_command  # noqa: E402

TRANSFORMS = "cuda_graph,torch_compile,torch_compile_max_autotune"


def problem_files(kernelbench: Path, level: int, numbers: List[str]) -> List[Path]:
    folder = kernelbench / f"level{level}"
    files = []
    for n in numbers:
        found = sorted(folder.glob(f"{n}_*.py"))
        if not found:
            raise SystemExit(f"best_of.py: no problem {n} in {folder}")
        files.append(found[0])
    return files


def task_of(problem: Path) -> str:
    return f"{problem.parent.name}/{problem.stem}"


def transform_of_technique() -> Dict[str, str]:
    """Built-in technique id -> transform name, from the seed catalogue."""
    seed = json.loads((ROOT / "kb_schema" / "seed" / "techniques.json").read_text(encoding="utf-8"))
    rows = seed if isinstance(seed, list) else seed.get("techniques", [])
    return {r["id"]: r["builtin"]["transform"] for r in rows if isinstance(r.get("builtin"), dict)}


def controls_from_run(run_dir: Path, task: str, transforms: List[str],
                      by_id: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
    """The controls among `transforms` that the run judged on the reference, by transform
    (`by_id`: transform_of_technique())."""
    found: Dict[str, Dict[str, Any]] = {}
    steps = run_dir / "steps.jsonl"
    if not steps.is_file():
        return found
    for raw in steps.read_text(encoding="utf-8").splitlines():
        try:
            step = json.loads(raw)
        except json.JSONDecodeError:
            continue
        transform = by_id.get(step.get("technique", ""))
        if transform not in transforms or transform in found or step.get("base_depth") != 0:
            continue
        correct = step.get("outcome") == "correct"
        found[transform] = {"task": task, "baseline": transform, "correct": correct,
                            "speedup": num(step.get("speedup")) if correct else None, "cand_ms": None,
                            "ref_ms": None, "error": None if correct else step.get("error"),
                            "wall_s": num(step.get("seconds")), "source": f"run step {step.get('global_step')}"}
    return found


def judge_controls(mblast: Path, problem: Path, transforms: List[str], gpu: str, work: Path,
                   timeout: float, extra: List[str]) -> List[Dict[str, Any]]:
    task = task_of(problem)
    cands = [make_candidate(t, problem, work / problem.stem) for t in transforms]
    cmd = ["env", f"CUDA_VISIBLE_DEVICES={gpu}", str(mblast), "eval", str(problem)]
    for c in cands:
        cmd += ["--candidate", str(c)]
    cmd += ["--json", "--timeout", str(int(timeout / len(cands))), *extra]
    rec = run_command(cmd, timeout)
    result = rec.get("result")
    results = result.get("results", [result]) if isinstance(result, dict) else (result or [])
    lines = []
    for t, r in zip(transforms, list(results) + [None] * len(transforms)):
        r = r if isinstance(r, dict) else {"error": f"no result (rc {rec['rc']}, timed out {rec['timed_out']})"}
        lines.append({"task": task, "baseline": t, "correct": bool(r.get("correct")),
                      "speedup": num(r.get("speedup")) if r.get("correct") else None,
                      "cand_ms": num(r.get("cand_ms")), "ref_ms": num(r.get("ref_ms")), "error": r.get("error"),
                      "wall_s": rec["wall_s"]})
    return lines


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--level", type=int, required=True)
    ap.add_argument("--problems", required=True, help="the numbers that start the problems' file names")
    ap.add_argument("--out", type=Path, required=True, help="the batch directory: baselines.jsonl goes there")
    ap.add_argument("--mblast", type=Path, default=ROOT / ".device" / "mblast")
    ap.add_argument("--gpus", default=os.environ.get("CUDA_VISIBLE_DEVICES", "0"))
    ap.add_argument("--transforms", default=TRANSFORMS)
    ap.add_argument("--timeout", type=float, default=400.0, help="seconds for one problem's eval")
    ap.add_argument("--reuse-runs", action="store_true",
                    help="take controls the batch's runs judged on the reference from their steps")
    ap.add_argument("--eval-args", default="", help="more options for mblast eval (e.g. '--device cpu' to try it here)")
    args = ap.parse_args(argv)
    problems = problem_files(args.kernelbench, args.level, [n for n in args.problems.split(",") if n])
    transforms = [t for t in args.transforms.split(",") if t]
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "best-of-work"
    todo: "queue.Queue[Path]" = queue.Queue()
    for p in problems:
        todo.put(p)
    lock = threading.Lock()
    by_id = transform_of_technique() if args.reuse_runs else {}
    sink = args.out / "baselines.jsonl"

    def worker(gpu: str) -> None:
        while True:
            try:
                problem = todo.get_nowait()
            except queue.Empty:
                return
            reused = controls_from_run(args.out / "runs" / problem.stem, task_of(problem), transforms,
                                       by_id) if args.reuse_runs else {}
            missing = [t for t in transforms if t not in reused]
            judged = judge_controls(args.mblast, problem, missing, gpu, work, args.timeout,
                                    args.eval_args.split()) if missing else []
            lines = list(reused.values()) + [dict(line, source="judged") for line in judged]
            with lock, sink.open("a", encoding="utf-8") as f:
                for line in lines:
                    f.write(json.dumps(line) + "\n")
                    print(f"{line['task']} {line['baseline']}: {line['speedup'] or line['error']}", flush=True)

    threads = [threading.Thread(target=worker, args=(g,)) for g in args.gpus.split(",") if g]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
