"""Fairness and memory over every problem judged in any stored acceptance call: each problem's
latest record (the highest call number) counts. Standard library only.

    python3 benchmarks/h200/fairness_all.py [--results benchmarks/h200/results] [--since N] [--json]

Prints the distribution of self-judged speedups, every problem outside [0.97, 1.03] or failed,
and the memory check by allocated and by reserved bytes; --since N counts only problems whose
latest record is from call N or later; --json prints the same as one object.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from acceptance import FAIR_RANGE, GIB, err_text, first, num, spread_of  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def call_number(path: Path) -> int:
    found = re.match(r"call(\d+)-records\.tar\.gz$", path.name)
    return int(found.group(1)) if found else -1


def latest_records(results: Path) -> Dict[str, Tuple[int, Dict[str, Any]]]:
    """problem label -> (call, record) of the latest call that judged it."""
    latest: Dict[str, Tuple[int, Dict[str, Any]]] = {}
    for archive in sorted(results.glob("call*-records.tar.gz"), key=call_number):
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if not (member.isfile() and member.name.startswith("fairness/") and member.name.endswith(".json")):
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                rec = json.loads(handle.read())
                latest[str(rec.get("label"))] = (call_number(archive), rec)
    return latest


def row(call: int, rec: Dict[str, Any]) -> Dict[str, Any]:
    r = first(rec)
    mem = r.get("memory") or {}
    eager = num(mem.get("eager_peak_bytes"))
    return {"problem": rec.get("label"), "call": call, "speedup": num(r.get("speedup")), "correct": r.get("correct"),
            "error": "" if r.get("correct") else err_text(rec),
            "eager_gib": eager / GIB if eager else None,
            "allocated_gib": (num(mem.get("judge_peak_allocated_bytes")) or 0) / GIB or None,
            "reserved_gib": (num(mem.get("judge_peak_bytes")) or 0) / GIB or None}


def summary(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    speedups = [r["speedup"] for r in rows if r["speedup"] is not None and r["correct"]]
    outside = [r for r in rows if not r["correct"] or r["speedup"] is None
               or not FAIR_RANGE[0] <= r["speedup"] <= FAIR_RANGE[1]]
    out: Dict[str, Any] = {"judged": len(rows), "in_range": len(rows) - len(outside), "outside": outside}
    if len(speedups) >= 2:
        out.update(spread_of(speedups))
    mem = [r for r in rows if r["eager_gib"] and r["allocated_gib"]]

    def over(key: str) -> List[Dict[str, Any]]:
        return [r for r in mem if r[key] and r[key] > 2 * r["eager_gib"] + 1]

    out["memory"] = {"reported": len(mem), "over_by_allocated": over("allocated_gib"),
                     "over_by_reserved": over("reserved_gib")}
    return out


def text(s: Dict[str, Any]) -> str:
    lines = [f"fairness: {s['judged']} problems judged against themselves, {s['in_range']} in "
             f"[{FAIR_RANGE[0]}, {FAIR_RANGE[1]}]; min {s.get('min', 0):.3f}, p5 {s.get('p5', 0):.3f}, "
             f"median {s.get('median', 0):.3f}, p95 {s.get('p95', 0):.3f}, max {s.get('max', 0):.3f}"]
    for r in s["outside"]:
        speed = f"{r['speedup']:.3f}" if r["speedup"] is not None else "-"
        lines.append(f"  outside: {r['problem']} (call {r['call']}): {speed} {r['error']}")
    m = s["memory"]
    lines.append(f"memory: {m['reported']} reported; over 2 x eager + 1 GiB by allocated bytes: "
                 f"{len(m['over_by_allocated'])}, by reserved bytes: {len(m['over_by_reserved'])}")
    for r in m["over_by_allocated"]:
        lines.append(f"  over by allocated: {r['problem']} (call {r['call']}): {r['allocated_gib']:.2f} GiB "
                     f"against eager {r['eager_gib']:.2f} GiB")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--since", type=int, default=0, help="only records of call N or later")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.results.is_dir():
        print(f"fairness_all: no folder {args.results}: pass --results with the acceptance results", file=sys.stderr)
        return 2
    rows = [row(call, rec) for call, rec in latest_records(args.results).values() if call >= args.since]
    if not rows:
        print(f"fairness_all: no call*-records.tar.gz with fairness records in {args.results}", file=sys.stderr)
        return 2
    s = summary(sorted(rows, key=lambda r: str(r["problem"])))
    print(json.dumps(s, indent=1) if args.json else text(s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
