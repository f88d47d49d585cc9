"""Is a compiled built-in slower inside the judge, or does each process compile its own speed?

    compile_variance.py --kernelbench DIR [--mblast PATH] [--problems level1/NAME,...]
                        [--transform torch_compile] [--repeats 3] [--deadline S] [--out DIR]

For each problem the built-in candidate is judged `--repeats` times, each by a fresh `mblast eval`
(MBLAST_EVAL_SERVER=0: a new worker, so Inductor compiles and autotunes anew), and timed as often in
fresh plain processes (plain_timing.py). Inductor's pointwise and reduction autotuning runs in every
process; the plain processes run with TORCH_LOGS=+inductor and the configurations each benchmarked
and the one it chose are printed. A judge slower than every plain process in every repeat is the
judge's fault; judge times inside the plain processes' spread are the compiler's. Prints a table;
rows go to OUT/rows.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from builtins_vs_plain import PLAIN, ROOT, judged, make_candidate, num, problem_path  # noqa: E402

CHOICE = re.compile(r"Benchmark all input configs|nreg \d+")


def plain_logged(problem: Path, candidate: Path, timeout: float, extra: List[str]) -> Dict[str, Any]:
    env = dict(os.environ, TORCH_LOGS="+inductor")
    rec = subprocess.run([sys.executable, str(PLAIN), str(problem), str(candidate), *extra], capture_output=True, text=True,
                         timeout=timeout, check=False, env=env)
    row: Dict[str, Any] = {}
    for line in rec.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
    choices = [line.split("] ", 1)[-1][:200] for line in rec.stderr.splitlines() if CHOICE.search(line)]
    row["autotune"] = choices[:24]
    if not row.get("cand_ms"):
        row["error"] = rec.stderr[-400:]
    return row


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--mblast", type=Path, default=ROOT / ".device" / "mblast")
    ap.add_argument("--problems", default="level1/88_MinGPTNewGelu,level2/57_Conv2d_ReLU_HardSwish")
    ap.add_argument("--transform", default="torch_compile")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--deadline", type=float, default=300.0)
    ap.add_argument("--plain-variants", default="",
                    help="extra plain processes per repeat, each with these plain_timing.py options; variants "
                         "separated by ';' (e.g. '--spin-up;--churn-gib 2')")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "compile_variance")
    args = ap.parse_args(argv)
    os.environ["MBLAST_EVAL_SERVER"] = "0"
    start = time.monotonic()
    rows: List[Dict[str, Any]] = []
    for name in args.problems.split(","):
        problem = problem_path(args.kernelbench, name)
        cand = make_candidate(args.transform, problem, args.out / name.replace("/", "_"))
        for r in range(args.repeats):
            if time.monotonic() - start > args.deadline:
                print(f"deadline: {name} repeat {r} not run", flush=True)
                break
            j = judged(args.mblast, problem, [cand], 120).get(cand.stem, {})
            p = plain_logged(problem, cand, 120, [])
            variants = {v: plain_logged(problem, cand, 120, v.split()) for v in args.plain_variants.split(";") if v}
            row = {"variants": {v: {"cand_ms": num(r.get("cand_ms")), "autotune": r.get("autotune", [])[-1:]}
                                for v, r in variants.items()},"problem": name, "repeat": r, "judge_cand_ms": num(j.get("cand_ms")),
                   "judge_ref_ms": num(j.get("ref_ms")), "judge_error": j.get("error"),
                   "plain_cand_ms": num(p.get("cand_ms")), "plain_ref_ms": num(p.get("ref_ms")),
                   "plain_error": p.get("error"), "autotune": p.get("autotune", [])}
            rows.append(row)
            print(f"{name} #{r}: judge {row['judge_cand_ms']} ms (ref {row['judge_ref_ms']}), plain "
                  f"{row['plain_cand_ms']} ms (ref {row['plain_ref_ms']}) {row['judge_error'] or ''}", flush=True)
            for line in row["autotune"][-1:]:
                print("    " + line, flush=True)
            for v, r in row["variants"].items():
                print(f"    plain {v}: {r['cand_ms']} ms {' '.join(r['autotune'])}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    print("\n| problem | repeat | judge cand ms | plain cand ms | judge ref ms | plain ref ms |\n|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['problem']} | {r['repeat']} | {r['judge_cand_ms']} | {r['plain_cand_ms']} | {r['judge_ref_ms']} | "
              f"{r['plain_ref_ms']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
