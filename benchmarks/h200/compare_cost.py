"""What one comparison of a large output costs the judge, per worker version.

    compare_cost.py [--worker DIR ...] [--numel N] [--repeats 2] [--device cuda|cpu]

Times `compare.diff` (the per-trial comparison against the float64 reference) and
`compare.passes` (the staleness checks' pass-or-fail comparison) of a float32 output of N
elements (default 1.6e9, level1/19_ReLU's) against a float64 reference on the GPU (or the CPU, at
a smaller N), for each worker directory given (default: this checkout's), each in a fresh process
so that the imports do not mix; then one float64 pass over the same data (|c - r|, max) as the
bandwidth floor a fused comparison would approach, and on the GPU the bytes each comparison
allocates beyond the data at its peak (the judge's memory budget leaves about 1 GiB for them on
the largest outputs). Give a worker of an older commit (`git archive COMMIT worker | tar -x -C
DIR`) to compare versions. Prints a table.

Note: mblast embeds its worker; a bundle built before a worker change judges with the old one
(MBLAST_WORKER_DIR overrides it), so time the worker itself here, not through an old bundle.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
CHILD = r"""
import sys, time, torch
sys.path.insert(0, sys.argv[1])
from mblast_worker.compare import Tol, diff, passes
n, repeats, device = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = torch.rand(n, device=device)
r = torch.rand(n, device=device, dtype=torch.float64)
tol = Tol(1e-4, 1e-4)

def sync():
    if device == "cuda":
        torch.cuda.synchronize()

def timed(fn):
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start

def peak_mib(fn):  # what fn allocates beyond the data, at its peak (the GPU's allocator only)
    if device != "cuda":
        return "-"
    sync()
    torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated()
    fn()
    sync()
    return f"{(torch.cuda.max_memory_allocated() - held) / 2**20:.0f}"

diff(c[:1 << 22], r[:1 << 22], tol, 1e-4)  # warm-up: kernels loaded, allocator primed
full = lambda: diff(c, r, tol, 1e-4, poison=0x7FC00000)
verdict = lambda: passes(c, r, tol, 1e-2)
times = [timed(full) for _ in range(repeats)]
verdicts = [timed(verdict) for _ in range(repeats)]
step = 1 << 24
floor = timed(lambda: [(c[a:a + step].double() - r[a:a + step]).abs().max() for a in range(0, n, step)])
print("/".join(f"{t:.3f}" for t in times), "/".join(f"{t:.3f}" for t in verdicts), f"{floor:.3f}",
      peak_mib(full), peak_mib(verdict))
"""


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="append", help="worker directory (repeatable; default: this checkout's)")
    ap.add_argument("--numel", type=int, default=1_610_612_736)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args(argv)
    workers = args.worker or [str(HERE.parent.parent / "worker")]
    for worker in workers:
        if not (Path(worker) / "mblast_worker" / "compare.py").is_file():
            print(f"compare_cost.py: {worker} holds no mblast_worker/compare.py — pass a worker directory",
                  file=sys.stderr)
            return 2
    print(f"| worker | diff of {args.numel:.3g} elements, s | passes(), s | one float64 pass, s "
          "| diff's temporaries, MiB | passes()' temporaries, MiB |")
    print("|---|---|---|---:|---:|---:|")
    for worker in workers:
        child = [sys.executable, "-c", CHILD, worker, str(args.numel), str(args.repeats), args.device]
        out = subprocess.run(child, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {worker} | failed: {out.stderr.strip().splitlines()[-1:]} | | | | |")
            continue
        times, verdicts, floor, peak_full, peak_verdict = out.stdout.split()
        print(f"| {worker} | {times.replace('/', ' / ')} | {verdicts.replace('/', ' / ')} | {floor} | {peak_full} "
              f"| {peak_verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
