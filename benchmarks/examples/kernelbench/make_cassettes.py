"""Writes the authored replay cassettes (opencl.cassette.jsonl, rvv.cassette.jsonl) that drive
`mblast optimize --backend opencl|rvv --shrink 65536` over five KernelBench level-1 problems
(benchmarks/native_kernelbench_optimize.sh): for each problem, one actor answer holding the
hand-written kernel in level1/ (<stem>.opt.cl, <stem>.rvv.c). An answer matches only the prompt
of its problem at the reduced sizes its kernel was written for: the problem's first docstring
line and the size changes the shrinker reports must both appear in it. Run it after changing
those kernels, with the KernelBench checkout's level-1 folder:

    python3 benchmarks/examples/kernelbench/make_cassettes.py KERNELBENCH/level1
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "worker"))

from mblast_bundle.shrink import shrink_file  # noqa: E402

BUDGET = 65536
STEMS = ["19_ReLU", "21_Sigmoid", "23_Softmax", "47_Sum_reduction_over_a_dimension",
         "1_Square_matrix_multiplication_"]
LAUNCH = re.compile(r"/\*\s*@launch\s*(.*?)\*/", re.S)


def docstring_line(source: str) -> str:
    """The first non-empty line of the problem's first docstring."""
    for line in source.split('"""')[1].splitlines():
        if line.strip():
            return line.strip()
    raise ValueError("the problem has an empty docstring")


def size_changes(problem: Path) -> str:
    """What the shrinker changed, as its header comment in the shrunken source writes it."""
    header = shrink_file(str(problem), BUDGET).source.splitlines()[0]
    return header.split("(mblast_bundle.shrink): ", 1)[1]


def answer(text: str) -> Dict[str, object]:
    return {"text": text, "provider": "replay", "model": "authored", "input_tokens": 0, "output_tokens": 0}


def opencl_text(stem: str) -> str:
    source = (HERE / "level1" / f"{stem}.opt.cl").read_text()
    plan = LAUNCH.search(source)
    if not plan:
        raise ValueError(f"{stem}.opt.cl has no @launch plan")
    kernels = (source[:plan.start()] + source[plan.end():]).strip("\n") + "\n"
    launch = json.dumps(json.loads(plan.group(1)), indent=1)
    return f"```opencl file=kernels.cl\n{kernels}```\n\n```json file=launch.json\n{launch}\n```\n"


def rvv_text(stem: str) -> str:
    return f"```c file=kernel.c\n{(HERE / 'level1' / f'{stem}.rvv.c').read_text().rstrip()}\n```\n"


def entries(level1: Path, backend: str) -> List[Dict[str, object]]:
    rows = []
    for stem in STEMS:
        problem = level1 / f"{stem}.py"
        marker = "launch.json" if backend == "opencl" else "mblast_forward"
        text = opencl_text(stem) if backend == "opencl" else rvv_text(stem)
        contains = [docstring_line(problem.read_text()), size_changes(problem), marker]
        rows.append({"note": "authored", "match": {"role_tag": "actor", "contains": contains},
                     "response": answer(text)})
    return rows


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("level1", type=Path, help="KernelBench's level1 folder")
    args = parser.parse_args(argv)
    for backend in ("opencl", "rvv"):
        with open(HERE / f"{backend}.cassette.jsonl", "w", encoding="utf-8") as f:
            for row in entries(args.level1, backend):
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
