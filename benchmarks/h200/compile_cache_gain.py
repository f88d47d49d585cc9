"""What a warm Inductor/Triton cache saves a candidate's first call (issue 21, item 4).

    python3 compile_cache_gain.py PROBLEM.py [PROBLEM.py ...] [--timeout S]

Each row is a fresh Python process that builds the problem's Model, wraps it in torch.compile
with one mode and times its first call (compiles happen there) and a second call, its cache
folders (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, HOME, TMPDIR) either empty ("cold") or the
folders an earlier row of the same problem left ("warm after MODE"). That is what a worker sees
today (its scratch folder, empty) beside what it would see with a cache copied in. Prints a
markdown table: problem, mode, cache, first call s, second call ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

CHILD = r"""
import json, sys, time, torch
path, mode = sys.argv[1], sys.argv[2]
scope = {"__name__": "cache_gain_problem", "__file__": path}
exec(compile(open(path).read(), path, "exec"), scope)
torch.manual_seed(42)
model = scope["Model"](*scope["get_init_inputs"]()).cuda().eval()
torch.manual_seed(1000003)
inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in scope["get_inputs"]()]
compiled = torch.compile(model, mode=None if mode == "default" else mode)
with torch.no_grad():
    torch.cuda.synchronize(); start = time.perf_counter()
    compiled(*inputs); torch.cuda.synchronize()
    first = time.perf_counter() - start
    start = time.perf_counter()
    compiled(*inputs); torch.cuda.synchronize()
    second = time.perf_counter() - start
print(json.dumps({"first_s": first, "second_ms": second * 1e3}))
"""

# (mode, the earlier row whose folders it starts from, or None for empty folders)
PLAN: List[Tuple[str, Optional[str]]] = [
    ("default", None),
    ("default", "default"),
    ("reduce-overhead", "default"),
    ("reduce-overhead", None),
    ("max-autotune-no-cudagraphs", "default"),
]


def run_child(problem: str, mode: str, folder: str, timeout: float) -> Dict[str, float]:
    env = dict(os.environ)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=os.path.join(folder, "inductor"),
        TRITON_CACHE_DIR=os.path.join(folder, "triton"),
        HOME=folder,
        TMPDIR=folder,
    )
    done = subprocess.run(
        [sys.executable, "-c", CHILD, problem, mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(problem: str, root: str, timeout: float) -> List[str]:
    rows = []
    left: Dict[str, str] = {}  # mode -> the folder its cold row left
    for n, (mode, after) in enumerate(PLAN):
        folder = os.path.join(root, f"{os.path.basename(problem)}-{n}")
        if after is not None:
            shutil.copytree(left[after], folder)
        else:
            os.makedirs(folder)
        try:
            got = run_child(problem, mode, folder, timeout)
        except subprocess.TimeoutExpired:
            got = {"error": f"timed out after {timeout} s"}
        if after is None:
            left[mode] = folder
        cache = "cold" if after is None else f"warm after {after}"
        if "error" in got:
            rows.append(f"| {os.path.basename(problem)} | {mode} | {cache} | {got['error']} | - |")
        else:
            rows.append(
                f"| {os.path.basename(problem)} | {mode} | {cache} | {got['first_s']:.2f} | "
                f"{got['second_ms']:.3f} |"
            )
        print(rows[-1], flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    print("| problem | mode | cache | first call s | second call ms |")
    print("|---|---|---|---:|---:|", flush=True)
    with tempfile.TemporaryDirectory() as root:
        for problem in args.problems:
            measure(os.path.abspath(problem), root, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
