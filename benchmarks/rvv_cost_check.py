#!/usr/bin/env python3
"""Does the RVV cost model rank candidates as an independent measure does?

For each native problem (benchmarks/problems/native, and KernelBench level-1 problems at reduced
sizes when their folder is given) it judges the plain C twin at -O2 and -O3 and the hand-written
RVV kernel at every LMUL it takes, with `mblast eval --backend rvv --cost-check on`: each run is
priced by the cost model (QEMU's execution log replayed, COST_MODEL.md) and counted by mblast's
QEMU plugin under the independent timing model (COST_MODEL.md, "Independent check"). Prints one
row per candidate and, per problem, Kendall's tau between the two orders and the pairs they
order differently. Standard library only.

    python3 benchmarks/rvv_cost_check.py [--kernelbench KERNELBENCH/level1] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "benchmarks" / "problems" / "native"
EXAMPLES = ROOT / "benchmarks" / "examples"
NATIVE_STEMS = ["swish", "row_sum", "softmax", "matmul", "conv1d"]
KERNELBENCH_STEMS = ["19_ReLU", "21_Sigmoid", "23_Softmax", "47_Sum_reduction_over_a_dimension",
                     "1_Square_matrix_multiplication_"]
SHRINK = "65536"
LMULS = [1, 2, 4, 8]


def evaluate(mblast: Path, problem: Path, candidate: Path, extra: List[str], cache: Path) -> Dict[str, Any]:
    cmd = [str(mblast), "-q", "eval", str(problem), "--backend", "rvv", "--candidate", str(candidate),
           "--cost-check", "on", "--seeds", "1", "--json", "--cache-dir", str(cache), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"mblast eval failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")


def row(name: str, cost: float, check: Dict[str, Any], model_instructions: Optional[int]) -> Dict[str, Any]:
    return {"candidate": name, "model_cost": cost, "check_cycles": check["cycles"],
            "check_instructions": check["instructions"], "model_instructions": model_instructions,
            "l1_misses": check["l1_misses"], "beats": check["beats"],
            "bytes": check["load_bytes"] + check["store_bytes"]}


def variants(source: Path, work: Path) -> List[Tuple[str, Path]]:
    """The kernel as written, or once per LMUL when it reads MBLAST_LMUL."""
    text = source.read_text()
    if "MBLAST_LMUL" not in text:
        return [(source.name, source)]
    out = []
    for lmul in LMULS:
        path = work / f"{source.stem}.lmul{lmul}.c"
        path.write_text(f"#define MBLAST_LMUL {lmul}\n" + text)
        out.append((f"{source.name} LMUL={lmul}", path))
    return out


def judge_problem(mblast: Path, problem: Path, kernel: Path, extra: List[str], work: Path) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    baselines_added = False
    for name, path in variants(kernel, work):
        r = evaluate(mblast, problem, path, extra, work / "cache")
        if not r.get("correct"):
            rows.append({"candidate": name, "error": (r.get("error") or "")[:200]})
            continue
        t = r["timing"]
        rows.append(row(name, t["cost"], t["check"], t["instructions"]))
        if not baselines_added:  # the baselines are the same for every variant
            baselines_added = True
            for b in r["baselines"]:
                if b["name"] in ("scalar_c_O2", "autovec_c_O3") and "cost_check" in b:
                    rows.append(row(f"{problem.stem}.c {b['name'][-2:]}", b["value"], b["cost_check"], None))
    return rows


def kendall_tau(xs: List[float], ys: List[float]) -> Optional[float]:
    """Kendall's tau-b of two orders (ties in either leave a pair out of both counts)."""
    concordant = discordant = ties_x = ties_y = 0
    for i, j in itertools.combinations(range(len(xs)), 2):
        dx, dy = xs[i] - xs[j], ys[i] - ys[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    denom = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denom if denom else None


def disagreements(rows: List[Dict[str, Any]]) -> List[str]:
    out = []
    for a, b in itertools.combinations(rows, 2):
        dm, dc = a["model_cost"] - b["model_cost"], a["check_cycles"] - b["check_cycles"]
        if dm * dc < 0:
            out.append(f"{a['candidate']} vs {b['candidate']}: model {a['model_cost']:.0f} / {b['model_cost']:.0f}, "
                       f"check {a['check_cycles']} / {b['check_cycles']}")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, help="KernelBench's level-1 folder (adds five problems at reduced sizes)")
    ap.add_argument("--mblast", type=Path, default=ROOT / os.environ.get("BUILD_DIR", "build") / "mblast")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args(argv)

    problems = [(NATIVE / f"{s}.py", EXAMPLES / "native" / f"{s}.rvv.c", []) for s in NATIVE_STEMS]
    if args.kernelbench:
        examples = EXAMPLES / "kernelbench" / "level1"
        problems += [(args.kernelbench / f"{s}.py", examples / f"{s}.rvv.c",
                      ["--shrink", SHRINK, "--baselines", str(examples)]) for s in KERNELBENCH_STEMS]
    report: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for problem, kernel, extra in problems:
            work = Path(tmp) / problem.stem
            work.mkdir()
            rows = judge_problem(args.mblast, problem, kernel, extra, work)
            ok = [r for r in rows if "error" not in r]
            report[problem.stem] = {
                "rows": rows,
                "kendall_tau": kendall_tau([r["model_cost"] for r in ok], [r["check_cycles"] for r in ok]),
                "disagreements": disagreements(ok),
                "instructions_match": all(r["model_instructions"] in (None, r["check_instructions"]) for r in ok),
            }
            if not args.json:
                print_problem(problem.stem, report[problem.stem])
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        taus = [p["kendall_tau"] for p in report.values() if p["kendall_tau"] is not None]
        print(f"\n{len(report)} problems; Kendall tau per problem: min {min(taus):.2f}, "
              f"median {sorted(taus)[len(taus) // 2]:.2f}; same order on "
              f"{sum(1 for p in report.values() if not p['disagreements'])} of {len(report)}")
    return 0


def print_problem(stem: str, p: Dict[str, Any]) -> None:
    tau = "n/a" if p["kendall_tau"] is None else f"{p['kendall_tau']:.2f}"
    print(f"\n{stem}: Kendall tau {tau}; instruction counts of model and plugin "
          f"{'equal' if p['instructions_match'] else 'DIFFER'}")
    print(f"  {'candidate':<44} {'model cost':>11} {'check cycles':>13} {'L1 misses':>10} {'beats':>9}")
    for r in sorted(p["rows"], key=lambda r: r.get("model_cost", float("inf"))):
        if "error" in r:
            print(f"  {r['candidate']:<44} failed: {r['error']}")
            continue
        print(f"  {r['candidate']:<44} {r['model_cost']:>11.0f} {r['check_cycles']:>13} {r['l1_misses']:>10} "
              f"{r['beats']:>9}")
    for d in p["disagreements"]:
        print(f"  order differs: {d}")


if __name__ == "__main__":
    sys.exit(main())
