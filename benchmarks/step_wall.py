"""Where a step's wall time goes, for the runs of a batch or single run directories.

    python3 benchmarks/step_wall.py BATCH_DIR_OR_RUN_DIR... [--eager-below-ms 10] [--json]

Per step (steps.jsonl) the candidate's stored result (candidates/<name>.json) gives the build
(driver-side compile, e.g. nvcc), the worker's candidate load (import; load_inline compiles here)
and the first call (lazy compilation: torch.compile, Triton); what remains of the step's wall is
the judge's and the loop's own cost, the "overhead" column. Of it, "outside worker" is the part
spent outside the worker's request (waiting for a worker to start, the loop, the driver); the
rest is the judge's own checks and timing. Issue 21 asks for an overhead of at most
2 s per step on problems whose eager time is under 10 ms; the summary counts the steps over it
and gives the worker's phases over those steps (median, p90, max: where the overhead goes). A
step that judged several workloads in one worker (a SOL-ExecBench problem) has its load, first
calls and worker time summed over them, and is held to the limit per workload; so is a step that
judged several candidates (a fix agent's, or a built-in as it is and inside a CUDA graph), per
candidate and workload.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent / "h200"))
from issue3_tools import quantile  # noqa: E402

LIMIT_S = 2.0


def run_dirs(paths: List[Path]) -> Iterator[Path]:
    for path in paths:
        if (path / "steps.jsonl").is_file():
            yield path
        elif (path / "runs").is_dir():
            yield from sorted(p for p in (path / "runs").iterdir() if (p / "steps.jsonl").is_file())
        else:
            raise SystemExit(f"step_wall.py: {path} holds neither steps.jsonl nor runs/ — pass a run or batch directory")


def json_lines(path: Path) -> List[Dict[str, Any]]:
    rows = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return rows


def number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def judged_files(step: Dict[str, Any]) -> List[str]:
    """Every candidate the step judged (a fix's, the same built-in inside a CUDA graph), else its one."""
    listed = [c.get("file") for c in step.get("candidates") or [] if isinstance(c, dict)]
    return [f for f in listed if isinstance(f, str) and f] or [step["candidate"]]


def step_row(run: Path, step: Dict[str, Any], eager_ms: Optional[float]) -> Optional[Dict[str, Any]]:
    candidate = step.get("candidate")
    if not candidate or not isinstance(step.get("seconds"), (int, float)):
        return None
    # A skipped step (a built-in with nothing to change) judged nothing: its "candidate" is its base,
    # whose result is not this step's. Its whole wall is the loop's own.
    skipped = step.get("outcome") == "skipped"
    results: List[Dict[str, Any]] = []
    for name in [] if skipped else judged_files(step):
        result_file = run / "candidates" / (Path(name).stem + ".json")
        if result_file.is_file():
            results.append(json.loads(result_file.read_text(encoding="utf-8")))
    # Each judged candidate's workloads in turn (one, but for a SOL-ExecBench problem's).
    per_workload = [p for r in results for p in workload_phases(r) or [r.get("phase_seconds") or {}]]
    build = sum(number(r.get("build_seconds")) for r in results)
    load = sum(number(p.get("load")) for p in per_workload)
    first_call = sum(number(p.get("trials/first_call")) for p in per_workload)
    worker = sum(number(p.get("total")) for p in per_workload)
    wall = float(step["seconds"])
    return {"run": run.name, "step": step.get("global_step"), "technique": step.get("technique"),
            "eager_ms": eager_ms, "wall_s": wall, "build_s": build, "load_s": load, "first_call_s": first_call,
            "overhead_s": max(0.0, wall - build - load - first_call), "workloads": max(1, len(per_workload)),
            "evaluations": len(results),
            "outside_s": wall if skipped else max(0.0, wall - build - worker) if worker else None,
            "outcome": step.get("outcome"), "phases": summed_phases(results)}


def summed_phases(results: List[Dict[str, Any]]) -> Dict[str, float]:
    """The worker's phases of the step's judged candidates, added up (a result of several workloads
    holds its workloads' phases added up already)."""
    phases: Dict[str, float] = {}
    for result in results:
        for name, value in (result.get("phase_seconds") or {}).items():
            phases[name] = phases.get(name, 0.0) + number(value)
    return phases


def workload_phases(result: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Each workload's time in the worker (total, load, first call) where one step judged several
    (a SOL-ExecBench problem), else nothing: the result's own phases are theirs added up."""
    workloads = [w for w in result.get("workloads") or [] if isinstance(w, dict)]
    per = [w.get("phase_seconds") for w in workloads]
    return per if len(per) > 1 and all(isinstance(p, dict) for p in per) else []


def seconds(value: Optional[float]) -> str:
    return f"{value:.2f}" if value is not None else "?"


def eager_ms_of(run: Path) -> Optional[float]:
    record = run / "run.json"
    if record.is_file():
        value = json.loads(record.read_text(encoding="utf-8")).get("baseline_ms")
        return float(value) if isinstance(value, (int, float)) else None
    return None


def print_phases(rows: List[Dict[str, Any]]) -> None:
    """The worker's phases over these steps, the largest median first: where the overhead goes."""
    names = sorted({name for r in rows for name in r["phases"]})
    if not names:
        return
    print("\n| worker phase | steps | median s | p90 s | max s |\n|---|---:|---:|---:|---:|")
    stats = []
    for name in names:
        values = sorted(r["phases"][name] for r in rows if name in r["phases"])
        stats.append((statistics.median(values), name, values))
    for median, name, values in sorted(stats, reverse=True):
        print(f"| {name} | {len(values)} | {median:.2f} | {quantile(values, 0.9):.2f} | {values[-1]:.2f} |")


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", type=Path, nargs="+")
    ap.add_argument("--eager-below-ms", type=float, default=10.0, help="problems counted against the limit")
    ap.add_argument("--json", action="store_true", help="one JSON object per step instead of the table")
    args = ap.parse_args(argv)
    rows = []
    for run in run_dirs(args.paths):
        eager = eager_ms_of(run)
        rows += [r for r in (step_row(run, s, eager) for s in json_lines(run / "steps.jsonl")) if r]
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print("| run | step | technique | eager ms | wall s | build s | load s | first call s | overhead s | outside worker s "
          "| workloads |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        eager = f"{r['eager_ms']:.3f}" if r["eager_ms"] is not None else "?"
        print(f"| {r['run']} | {r['step']} | {r['technique']} | {eager} | {r['wall_s']:.2f} | {r['build_s']:.2f} | "
              f"{r['load_s']:.2f} | {r['first_call_s']:.2f} | {r['overhead_s']:.2f} | {seconds(r['outside_s'])} "
              f"| {r['workloads']} |")
    counted = [r for r in rows if r["eager_ms"] is not None and r["eager_ms"] < args.eager_below_ms]
    if counted:
        # A step that judged several workloads or candidates is held to the limit per each.
        each = [r["overhead_s"] / r["workloads"] for r in counted]
        print(f"\nsteps on problems with eager < {args.eager_below_ms:g} ms: {len(counted)}; overhead per workload "
              f"median {statistics.median(each):.2f} s, max {max(each):.2f} s; over {LIMIT_S:g} s: "
              f"{sum(e > LIMIT_S for e in each)}")
        outside = [r["outside_s"] for r in counted if r["outside_s"] is not None]
        if outside:
            print(f"outside the worker's request: median {statistics.median(outside):.2f} s, max {max(outside):.2f} s")
        print_phases(counted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
