"""Coverage of KernelBench problems on the native backends at reduced sizes: for each problem,
whether mblast makes its tensor bundles (`--shrink`), and which baselines OpenCL (PoCL) and RVV
(QEMU) measure for it, with each failure's cause. Each problem runs
`mblast optimize --backend opencl|rvv --shrink N --llm none --iterations 1 --steps 1`, which makes
the bundles and measures the baselines, then stops (the native built-ins need a candidate, so
nothing is evaluated); the bundles are made once and shared by both.

    python3 benchmarks/kernelbench_coverage.py KERNELBENCH/level1 [--mblast build/mblast]
        [--shrink 65536] [--jobs 2] [--timeout 180] [--baselines DIR] [--problems 1-100]
        [--markdown FILE]

Prints a Markdown table and a summary; exit 0 when every problem was run (whatever it found),
2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

BACKENDS = ("opencl", "rvv")
HEADLINE = {"opencl": "torch_cpu", "rvv": "best_c"}


@dataclass
class Outcome:
    ok: bool
    cause: str = ""  # why not, one line
    detail: str = ""  # what it measured, or the full error


@dataclass
class Row:
    number: int
    stem: str
    bundle: Outcome
    backends: Dict[str, Outcome] = field(default_factory=dict)
    shrink: Optional[Dict[str, Any]] = None
    seconds: float = 0.0


def problem_number(path: Path) -> int:
    head = path.name.split("_", 1)[0]
    return int(head) if head.isdigit() else 0


def parse_range(text: str) -> List[int]:
    """"1-20,33" -> [1, ..., 20, 33]."""
    numbers: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            numbers.extend(range(int(low), int(high) + 1))
        else:
            numbers.append(int(part))
    return numbers


_BUNDLE = "the problem cannot be bundled for a native backend: "


def error_text(stderr: str) -> str:
    """mblast's own error message from its stderr (after its last `mblast: error: ` or
    `mblast: usage error: `, up to the `fix:` line, on one line), else the last non-empty line."""
    found = list(re.finditer(r"mblast: (?:usage )?error: ", stderr))
    if found:
        message = stderr[found[-1].end():].split("\n  fix: ", 1)[0]
        return " ".join(message.split())
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "no error message"


def bundle_cause(message: str) -> str:
    """A short cause for a problem the bundle step refused (the shrinker's or the bundler's
    message), the same words for the same cause."""
    m = re.search(r"holds (\d+) or more elements at its smallest reduced sizes", message)
    if m:
        return f"too large at its smallest reduced sizes ({m.group(1)}+ elements)"
    m = re.search(r"has no attribute '([^']+)'", message)
    if m and "module 'torch" in message:
        return f"needs a newer PyTorch (no {m.group(1)})"
    m = re.search(r"no reduced size of the problem under \d+ elements runs: (?:the shrunken problem: )?(.*?);"
                  r" a larger budget", message)
    if m:
        return "no reduced size fits: " + re.sub(r"^.*raised ", "", m.group(1))
    m = re.search(r"does not run at any of its sizes under \d+ elements: (?:the shrunken problem: )?(.*)", message)
    if m:
        return "does not run: " + m.group(1)[:160]
    m = re.search(r"has dtype (\S+); native backends take", message)
    if m:
        return f"dtype {m.group(1)} not supported by the bundles"
    if "native backends take tensors and numbers" in message:
        return "an input is not a tensor or number"
    m = re.search(r"forward raised (.*)", message)
    if m:
        return "forward raised " + m.group(1)
    return message.split("\n", 1)[0][:160]


def classify(backend: str, returncode: Optional[int], stderr: str, result: Optional[Dict[str, Any]],
             timeout_s: float) -> Tuple[Outcome, Outcome]:
    """(bundle, baseline) outcomes of one `mblast optimize ... --llm none --json` run:
    returncode None means it was killed at the timeout."""
    if returncode is None:
        return Outcome(False, f"timeout after {timeout_s:g} s"), Outcome(False, "not run: no bundle")
    if returncode == 0 and result is None:
        return Outcome(True), Outcome(False, "no JSON summary on stdout")
    if returncode != 0 or result is None:
        message = error_text(stderr)
        if _BUNDLE in message:
            cause = bundle_cause(message.split(_BUNDLE, 1)[1])
            return Outcome(False, cause, message), Outcome(False, "not run: no bundle")
        return Outcome(True), Outcome(False, message[:200], message)
    names = [b.get("name", "") for b in result.get("baselines", [])]
    measured = ", ".join(f"{b['name']} {b['value']:.4g} {b['unit']}" for b in result.get("baselines", []))
    if HEADLINE[backend] in names:
        return Outcome(True), Outcome(True, "", measured)
    missing = [m for m in result.get("missing_baselines", []) if isinstance(m, str)]
    cause = baseline_cause(missing) if missing else f"no {HEADLINE[backend]} baseline"
    return Outcome(True), Outcome(False, cause, "; ".join(missing))


def baseline_cause(missing: Sequence[str]) -> str:
    """A short cause from the backend's missing_baselines lines: a twin that failed before one
    that is absent, since that is the one someone can fix."""
    for line in missing:
        if " failed: " in line:
            name, rest = line.split(": ", 1)
            return f"{name} failed: {rest.split(' failed: ', 1)[1][:120]}"
    for line in missing:
        if line.startswith("best_c: no scalar C twin"):
            return "no scalar C twin"
        if line.startswith("torch_cpu:"):
            return line.split(": ", 1)[1]
    return missing[0][:160]


def run_one(args: argparse.Namespace, problem: Path, work: Path) -> Row:
    started = time.monotonic()
    row = Row(problem_number(problem), problem.stem, Outcome(False, "not run"))
    for backend in BACKENDS:
        out = work / "runs" / f"{backend}-{problem.stem}"
        argv = [str(args.mblast), "-q", "--kb", str(work / f"kb-{problem.stem}.sqlite"), "optimize", str(problem),
                "--backend", backend, "--shrink", str(args.shrink), "--llm", "none", "--iterations", "1", "--steps", "1",
                "--seeds", str(args.seeds), "--runs", str(args.runs), "--cache-dir", str(work / "cache"),
                "--out", str(out), "--json"]
        if args.baselines:
            argv += ["--baselines", str(args.baselines)]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, check=False)
            returncode: Optional[int] = done.returncode
            stdout, stderr = done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            returncode, stdout = None, ""
            stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        result: Optional[Dict[str, Any]] = None
        if returncode == 0:
            try:
                result = json.loads(stdout)
            except json.JSONDecodeError:
                result = None
        bundle, baseline = classify(backend, returncode, stderr, result, args.timeout)
        if result and result.get("shrink"):
            row.shrink = result["shrink"]
        if backend == BACKENDS[0] or not row.bundle.ok:
            row.bundle = bundle
        row.backends[backend] = baseline
        if not bundle.ok:  # the other backend would make the same bundles and fail the same way
            for other in BACKENDS:
                row.backends.setdefault(other, Outcome(False, "not run: no bundle"))
            break
    row.seconds = time.monotonic() - started
    return row


def cell(outcome: Outcome) -> str:
    return "ok" if outcome.ok else "**no**: " + outcome.cause.replace("|", "\\|")


def table(rows: List[Row], shrink: int) -> str:
    lines = [f"| # | problem | sizes at --shrink {shrink} | bundle | OpenCL baseline | RVV baseline |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        sizes = "-"
        if r.shrink:
            sizes = f"/{r.shrink['factor']}, {r.shrink['elements']} elements"
        lines.append(f"| {r.number} | {r.stem} | {sizes} | {cell(r.bundle)} | {cell(r.backends['opencl'])} | "
                     f"{cell(r.backends['rvv'])} |")
    return "\n".join(lines)


def summary(rows: List[Row]) -> str:
    n = len(rows)
    counts = [f"bundles {sum(r.bundle.ok for r in rows)}/{n}"]
    for backend, title in (("opencl", "OpenCL (PoCL) baseline"), ("rvv", "RVV (QEMU) baseline")):
        counts.append(f"{title} {sum(r.backends[backend].ok for r in rows)}/{n}")
    causes: Dict[str, int] = {}
    for r in rows:
        for stage, outcome in [("bundle", r.bundle)] + [(b, r.backends[b]) for b in BACKENDS]:
            if not outcome.ok and not outcome.cause.startswith("not run"):
                key = f"{stage}: {outcome.cause}"
                causes[key] = causes.get(key, 0) + 1
    lines = ["Summary: " + "; ".join(counts) + "."]
    lines += [f"- {count} x {key}" for key, count in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("level", type=Path, help="a KernelBench level folder (e.g. KernelBench/level1)")
    parser.add_argument("--mblast", type=Path, default=Path("build/mblast"))
    parser.add_argument("--shrink", type=int, default=65536, help="element budget of each reduced problem")
    parser.add_argument("--jobs", type=int, default=2, help="problems run at once")
    parser.add_argument("--timeout", type=float, default=180, help="seconds per problem and backend")
    parser.add_argument("--seeds", type=int, default=2, help="bundles (verification seeds) per problem")
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each baseline")
    parser.add_argument("--baselines", type=Path, help="folder with hand-written <stem>.c / <stem>.naive.cl")
    parser.add_argument("--problems", help="problem numbers, e.g. 1-20,33 (default: all)")
    parser.add_argument("--markdown", type=Path, help="also write the table and summary here")
    args = parser.parse_args(argv)
    if not args.level.is_dir():
        print(f"kernelbench_coverage: {args.level} is not a folder: give KernelBench's level folder", file=sys.stderr)
        return 2
    if not os.access(args.mblast, os.X_OK):
        print(f"kernelbench_coverage: {args.mblast} is not executable: build mblast or pass --mblast", file=sys.stderr)
        return 2
    args.mblast = args.mblast.resolve()
    if args.baselines:
        args.baselines = args.baselines.resolve()
    problems = sorted(args.level.glob("*.py"), key=problem_number)
    if args.problems:
        wanted = set(parse_range(args.problems))
        problems = [p for p in problems if problem_number(p) in wanted]
    if not problems:
        print(f"kernelbench_coverage: no problems in {args.level}", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mblast-coverage-") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda p: run_one(args, p, Path(tmp)), problems))
    text = (f"{table(rows, args.shrink)}\n\n{summary(rows)}\n\n"
            f"{len(rows)} problems in {time.monotonic() - started:.0f} s ({args.jobs} at once).\n")
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
