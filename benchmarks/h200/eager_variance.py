"""Why does a host-bound model's eager time differ between the judge's evaluations of one run?

    eager_variance.py --kernelbench DIR [--problems level3/9_ResNet18,...] [--processes 5]
                      [--mblast PATH] [--judged 3] [--out DIR]

In calls 40-43 the eager time of host-bound level-3 models differed between evaluations of one
run by up to 2.3x (ResNet18 1.96-4.61 ms in call 43) while the candidates' times held. Per
problem, this times eager in `--processes` fresh plain Python processes that import nothing of the
judge, unpinned and then pinned to one core, three blocks of 40 forwards each (CUDA events around
one forward, the L2 flushed, autograd recording as the judge times), and records each forward's
host time (the Python call, no sync), the core it ran on and the machine's load. Then
`mblast eval P --candidate P` (the reference against itself, through the eval server) `--judged`
times for the judge's own eager. Spread across processes with steady blocks inside each says the
cause is per process; a pinned spread smaller than the unpinned one says it is the core.
Prints a table; rows go to OUT/eager_variance.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
DEFAULT_PROBLEMS = "level3/9_ResNet18,level3/19_MobileNetV1,level3/28_VisionTransformer"


def child(problem_path: str, blocks: int, runs: int) -> Dict[str, Any]:
    import torch

    sys.path.insert(0, str(HERE))
    from plain_timing import SEED_INPUTS, build, load, on_gpu

    problem = load(problem_path)
    model = build(problem["Model"], list(problem["get_init_inputs"]()))
    torch.manual_seed(SEED_INPUTS)
    inputs = [on_gpu(x) for x in problem["get_inputs"]()]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        model(*inputs)
    block_ms: List[float] = []
    host_ms: List[float] = []
    for _ in range(blocks):
        samples = []
        for _ in range(runs):
            torch.cuda.synchronize()
            flush.fill_(0x5A)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            t0 = time.perf_counter()
            model(*inputs)
            host_ms.append((time.perf_counter() - t0) * 1e3)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        block_ms.append(statistics.median(samples))
    return {"block_ms": block_ms, "host_ms": statistics.median(host_ms), "cpu": current_cpu(),
            "affinity": len(os.sched_getaffinity(0)), "threads": torch.get_num_threads(),
            "load1": os.getloadavg()[0]}


def current_cpu() -> int:
    """The core this process last ran on (field 39 of /proc/self/stat)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[36])


def plain_row(problem: str, path: Path, core: Optional[int]) -> Dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path)]
    if core is not None:
        cmd = ["taskset", "-c", str(core)] + cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    try:
        row = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        row = {"error": (proc.stderr or proc.stdout)[-400:]}
    return {"problem": problem, "kind": "plain" if core is None else f"pinned {core}", **row}


def judged_row(problem: str, path: Path, mblast: str) -> Dict[str, Any]:
    proc = subprocess.run([mblast, "eval", str(path), "--candidate", str(path), "--json"],
                          capture_output=True, text=True, timeout=300)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"problem": problem, "kind": "judged", "error": proc.stderr[-400:]}
    return {"problem": problem, "kind": "judged", "block_ms": [result.get("ref_ms"), result.get("cand_ms")]}


def table_line(row: Dict[str, Any]) -> str:
    if "error" in row:
        return f"| {row['problem']} | {row['kind']} | error: {row['error'][-120:]!r} | | | |"
    blocks = " / ".join(f"{b:.3f}" if isinstance(b, (int, float)) else "?" for b in row["block_ms"])
    host = f"{row['host_ms']:.3f}" if "host_ms" in row else ""
    return f"| {row['problem']} | {row['kind']} | {blocks} | {host} | {row.get('cpu', '')} | {row.get('load1', '')} |"


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--kernelbench", type=Path)
    ap.add_argument("--problems", default=DEFAULT_PROBLEMS)
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--mblast", default=".device/mblast")
    ap.add_argument("--judged", type=int, default=3, help="reference-against-itself evaluations per problem")
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds after which no new process starts")
    ap.add_argument("--out", type=Path, default=Path("eager_variance"))
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, blocks=3, runs=40)))
        return 0
    if args.kernelbench is None:
        ap.error("--kernelbench DIR is required (the folder holding level1 to level3)")
    end = time.monotonic() + args.deadline
    args.out.mkdir(parents=True, exist_ok=True)
    print("| problem | process | eager ms per block (judged: ref / cand) | host ms | cpu | load |")
    print("|---|---|---|---:|---:|---:|")
    with open(args.out / "eager_variance.jsonl", "w", encoding="utf-8") as sink:
        for problem in args.problems.split(","):
            path = args.kernelbench / (problem + ".py")
            plans = [None] * args.processes + [3] * args.processes
            rows = (plain_row(problem, path, core) for core in plans)
            judged = (judged_row(problem, path, args.mblast) for _ in range(args.judged))
            for row in list_until(rows, end) + list_until(judged, end):
                sink.write(json.dumps(row) + "\n")
    return 0


def list_until(rows: Any, end: float) -> List[Dict[str, Any]]:
    out = []
    for row in rows:
        out.append(row)
        print(table_line(row), flush=True)
        if time.monotonic() > end:
            break
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
