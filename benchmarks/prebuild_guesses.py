#!/usr/bin/env python3
"""Each `optimize --prebuild` guess beside the step it was made for, and the same technique's step
in a batch run without it (benchmarks/h200/arms_ab.sh, issue 21):

    python3 benchmarks/prebuild_guesses.py PREBUILD_BATCH CONTROL_BATCH

A batch is scripts/run_kernelbench.sh's folder (runs/NAME/ per problem). A guess is a file of a
run's prebuild/ folder, s<step>-<transforms>-<hash>.py; the step judged the guessed text when its
candidate has the same stem. A step's wall includes any wait for the evaluation started ahead of it. Prints a
Markdown table and a summary line."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from step_wall import json_lines

CANDIDATE = re.compile(r"^s(\d+)-(.+)-[0-9a-f]{12}\.py$")


@dataclass
class Step:
    number: int
    technique: str
    stem: str
    speedup: Optional[float]
    seconds: float


def read_steps(run: Path) -> List[Step]:
    path = run / "steps.jsonl"
    steps = []
    for record in json_lines(path) if path.exists() else []:  # a torn last line is skipped
        match = CANDIDATE.match(str(record.get("candidate", "")))
        steps.append(Step(int(record.get("step", 0)), str(record.get("technique", "")),
                          match.group(2) if match else "", record.get("speedup"),
                          float(record.get("seconds") or 0.0)))
    return steps


def read_guesses(run: Path) -> Dict[int, str]:
    """Step number -> the guessed stem (transforms), without the inner files of graph guesses."""
    guesses: Dict[int, str] = {}
    folder = run / "prebuild"
    if not folder.is_dir():
        return guesses
    for file in folder.iterdir():
        match = CANDIDATE.match(file.name)
        if match and not match.group(2).endswith("-inner"):
            guesses[int(match.group(1))] = match.group(2)
    return guesses


def fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def compare(prebuild_batch: Path, control_batch: Path) -> List[str]:
    lines = ["| problem | step | technique | guess | step judged it | speedup, wall s | control: speedup, wall s |",
             "|---|---:|---|---|---|---:|---:|"]
    guessed = judged_same = 0
    wall_with = wall_without = 0.0
    for run in sorted((prebuild_batch / "runs").iterdir()):
        if not run.is_dir():
            continue
        guesses = read_guesses(run)
        control = {s.technique: s for s in read_steps(control_batch / "runs" / run.name)}
        for step in read_steps(run):
            guess = guesses.get(step.number)
            if guess is None:
                continue
            guessed += 1
            same = step.stem == guess
            judged_same += same
            other = control.get(step.technique)
            if same and other is not None:
                wall_with += step.seconds
                wall_without += other.seconds
            control_text = f"{fmt(other.speedup)}, {other.seconds:.2f}" if other else "-"
            lines.append(f"| {run.name} | {step.number} | {step.technique} | {guess} | "
                         f"{'yes' if same else 'no: ' + step.stem} | {fmt(step.speedup)}, {step.seconds:.2f} | "
                         f"{control_text} |")
    lines.append("")
    lines.append(f"{guessed} guesses; {judged_same} judged as guessed by their step; over those whose technique the "
                 f"control also judged, step wall {wall_with:.1f} s with --prebuild, {wall_without:.1f} s without")
    return lines


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prebuild_batch", type=Path, help="the batch run with --prebuild")
    parser.add_argument("control_batch", type=Path, help="the same problems run without it")
    args = parser.parse_args(argv)
    for batch in (args.prebuild_batch, args.control_batch):
        if not (batch / "runs").is_dir():
            print(f"prebuild_guesses.py: {batch} holds no runs/ folder; pass a batch of scripts/run_kernelbench.sh",
                  file=sys.stderr)
            return 2
    print("\n".join(compare(args.prebuild_batch, args.control_batch)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
