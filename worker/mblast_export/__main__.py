"""python3 -m mblast_export CANDIDATE.py > OUT.py"""

from __future__ import annotations

import sys
from typing import Sequence

from .export import export_kernelbench


def main(argv: Sequence[str]) -> int:
    usage = "usage: python3 -m mblast_export CANDIDATE.py > OUT.py\n"
    if len(argv) == 1:
        with open(argv[0], encoding="utf-8") as fh:
            text = fh.read()
        try:
            sys.stdout.write(export_kernelbench(text))
        except (ValueError, SyntaxError) as exc:
            sys.stderr.write(f"mblast_export: {argv[0]}: {exc}\n")
            return 1
        return 0
    sys.stderr.write(usage)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
