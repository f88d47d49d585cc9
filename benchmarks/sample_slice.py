"""One level's problems of a sample list, or a slice of them, comma-separated for ONLY=.

    python3 benchmarks/sample_slice.py LIST LEVEL [K/N] [--kernelbench DIR]

LIST is a file like benchmarks/kernelbench_sample30.txt: comment lines, then one line per level,
the level and the numbers that start its problems' file names. K/N (1/1 by default) is the K-th of
N nearly equal slices in the listed order, so that a list too long for one device call runs in N
calls. With --kernelbench DIR every listed problem of the level must have a file in DIR/levelL/.
Exit 2, with the reason, for a missing level, a bad slice or a missing problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List


def read_levels(path: Path) -> Dict[int, List[int]]:
    """Level to its problem numbers, in the listed order."""
    levels: Dict[int, List[int]] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        try:
            level, problems = int(fields[0]), [int(p) for p in fields[1].split(",")]
        except (IndexError, ValueError):
            raise ValueError(f"{path}:{number}: expected 'LEVEL N1,N2,...', got {raw!r}") from None
        if len(fields) != 2 or len(set(problems)) != len(problems):
            raise ValueError(f"{path}:{number}: expected 'LEVEL N1,N2,...' with each number once, got {raw!r}")
        levels[level] = problems
    return levels


def parse_part(part: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in part.split("/"))
    except ValueError:
        raise ValueError(f"slice {part!r}: expected K/N, e.g. 1/4") from None
    if not 1 <= k <= n:
        raise ValueError(f"slice {part!r}: K must be between 1 and N")
    return k, n


def slice_of(problems: List[int], k: int, n: int) -> List[int]:
    """The K-th of N slices whose sizes differ by at most one (the first ones the larger)."""
    size, extra = divmod(len(problems), n)
    start = (k - 1) * size + min(k - 1, extra)
    return problems[start : start + size + (1 if k <= extra else 0)]


def missing_files(kernelbench: Path, level: int, problems: List[int]) -> List[int]:
    folder = kernelbench / f"level{level}"
    return [p for p in problems if not list(folder.glob(f"{p}_*.py"))]


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("list", type=Path)
    ap.add_argument("level", type=int)
    ap.add_argument("part", nargs="?", default="1/1")
    ap.add_argument("--kernelbench", type=Path)
    args = ap.parse_args(argv)
    try:
        levels = read_levels(args.list)
        k, n = parse_part(args.part)
    except (OSError, ValueError) as error:
        print(f"sample_slice.py: {error}", file=sys.stderr)
        return 2
    if args.level not in levels:
        print(f"sample_slice.py: {args.list} has no level {args.level} (it has {sorted(levels)})", file=sys.stderr)
        return 2
    chosen = slice_of(levels[args.level], k, n)
    if args.kernelbench is not None:
        missing = missing_files(args.kernelbench, args.level, chosen)
        if missing:
            print(f"sample_slice.py: no file for level {args.level} problems {missing} in {args.kernelbench}/level{args.level}"
                  " — pass the folder holding KernelBench's level1..3", file=sys.stderr)
            return 2
    if not chosen:
        print(f"sample_slice.py: slice {args.part} of level {args.level} is empty (it has {len(levels[args.level])} problems)",
              file=sys.stderr)
        return 2
    print(",".join(str(p) for p in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
