"""python3 -m mblast_cuda export CANDIDATE.py | key [--arch sm_90] [FLAG...] < SOURCE.cu"""

from __future__ import annotations

import sys
from typing import Sequence

from .export import export_kernelbench
from .nvcc import cache_key



def main(argv: Sequence[str]) -> int:
    usage = (
        "usage: python3 -m mblast_cuda export CANDIDATE.py > OUT.py\n"
        "       python3 -m mblast_cuda key [--arch sm_90] [FLAG...] < SOURCE.cu\n"
    )
    if len(argv) == 2 and argv[0] == "export":
        with open(argv[1], encoding="utf-8") as fh:
            text = fh.read()
        try:
            sys.stdout.write(export_kernelbench(text))
        except (ValueError, SyntaxError) as exc:
            sys.stderr.write(f"mblast_cuda export: {argv[1]}: {exc}\n")
            return 1
        return 0
    if argv and argv[0] == "key":
        rest = list(argv[1:])
        arch = None
        if len(rest) >= 2 and rest[0] == "--arch":
            arch, rest = rest[1], rest[2:]
        source = sys.stdin.buffer.read().decode("utf-8")
        print(cache_key(source, arch=arch, extra_flags=rest))
        return 0
    sys.stderr.write(usage)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
