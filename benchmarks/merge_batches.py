#!/usr/bin/env python3
"""One batch folder from batches of the same level run apart (sample30.sh's ONLY= halves, each in
its own device call), so that `mblast report` prints the level as one batch:

    python3 benchmarks/merge_batches.py OUT BATCH [BATCH ...] [--mblast PATH]

A batch is scripts/run_kernelbench.sh's folder (batch.json, results.jsonl, runs/). The batches
must be of the same level with the same optimize flags, and no problem may be in two of them.
OUT gets every run and log, the results and the controls (baselines.jsonl) of all, and a
batch.json listing every problem with the batches it came from; with --mblast, their knowledge
bases folded into OUT/kb.sqlite (`mblast kb merge`), for the report's technique table
(`mblast report OUT --kb OUT/kb.sqlite`: the runs name the KB path of the machine they ran on).
OUT must not exist yet. Exit 2 for batches that do not belong together."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

APPENDED = ("results.jsonl", "baselines.jsonl")


class Mismatch(Exception):
    pass


def read_batch(folder: Path) -> Dict[str, Any]:
    path = folder / "batch.json"
    if not path.is_file():
        raise Mismatch(f"{folder} holds no batch.json: give folders that scripts/run_kernelbench.sh wrote")
    return json.loads(path.read_text())


def check_together(folders: List[Path], batches: List[Dict[str, Any]]) -> None:
    first = batches[0]
    seen: Dict[str, Path] = {}
    for folder, batch in zip(folders, batches):
        for key in ("level", "flags"):
            if batch.get(key) != first.get(key):
                raise Mismatch(f"{folder} has {key} {batch.get(key)!r}, {folders[0]} {first.get(key)!r}: "
                               "merge only batches of one level run with the same flags")
        for problem in batch.get("problems", []):
            if problem in seen:
                raise Mismatch(f"{problem} is in both {seen[problem]} and {folder}: merge batches of "
                               "different problems")
            seen[problem] = folder


def merged_record(folders: List[Path], batches: List[Dict[str, Any]]) -> Dict[str, Any]:
    record = dict(batches[0])
    record["problems"] = [p for batch in batches for p in batch.get("problems", [])]
    record["merged_from"] = [{"batch": str(folder), "started_at": batch.get("started_at"),
                              "problems": batch.get("problems", [])} for folder, batch in zip(folders, batches)]
    return record


def copy_tree_into(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)


def merge(out: Path, folders: List[Path], mblast: str | None) -> None:
    batches = [read_batch(folder) for folder in folders]
    check_together(folders, batches)
    out.mkdir(parents=True)
    for folder in folders:
        copy_tree_into(folder / "runs", out / "runs")
        copy_tree_into(folder / "logs", out / "logs")
    for name in APPENDED:
        lines = [line for folder in folders if (folder / name).is_file()
                 for line in (folder / name).read_text().splitlines() if line.strip()]
        if lines:
            (out / name).write_text("\n".join(lines) + "\n")
    (out / "batch.json").write_text(json.dumps(merged_record(folders, batches), indent=2) + "\n")
    kbs = [str(folder / "kb.sqlite") for folder in folders if (folder / "kb.sqlite").is_file()]
    if mblast and kbs:
        subprocess.run([mblast, "kb", "merge", *kbs, "-o", str(out / "kb.sqlite")], check=True,
                       stdout=subprocess.DEVNULL)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the merged batch folder (must not exist)")
    parser.add_argument("batches", type=Path, nargs="+", help="batch folders of one level")
    parser.add_argument("--mblast", help="mblast binary, to fold the batches' knowledge bases into OUT/kb.sqlite")
    args = parser.parse_args(argv)
    if args.out.exists():
        print(f"merge_batches.py: {args.out} exists; give a new folder", file=sys.stderr)
        return 2
    try:
        merge(args.out, args.batches, args.mblast)
    except Mismatch as exc:
        print(f"merge_batches.py: {exc}", file=sys.stderr)
        return 2
    runs = sum(1 for _ in (args.out / "runs").iterdir()) if (args.out / "runs").is_dir() else 0
    kb = f" --kb {args.out / 'kb.sqlite'}" if (args.out / "kb.sqlite").is_file() else ""
    print(f"{args.out}: {runs} runs from {len(args.batches)} batches; mblast report {args.out}{kb}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
