"""Times a KernelBench problem the way KernelBench's own harness does, as an independent yardstick
for mblast's timing: CUDA events around each forward, a 256 MB buffer written between runs to
flush L2, the mean of N runs after warm-up, one input set.

    python3 kernelbench_timing.py PROBLEM.py [--runs 100] [--warmup 10]

Prints one JSON object: {"problem", "mean_ms", "median_ms", "runs"}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import torch


def load_problem(path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"kb_problem_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", type=Path)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()

    module = load_problem(args.problem)
    torch.manual_seed(42)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    times: list[float] = []
    with torch.no_grad():
        for _ in range(args.warmup):
            model(*inputs)
        torch.cuda.synchronize()
        for _ in range(args.runs):
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    print(json.dumps({"problem": args.problem.name, "mean_ms": statistics.mean(times),
                      "median_ms": statistics.median(times), "runs": len(times)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
