"""The control for a judged candidate: the same files timed in a plain Python process.

    python3 plain_timing.py PROBLEM.py CANDIDATE.py [CANDIDATE.py ...] [--runs N] [--no-grad]

No judge code is imported and nothing watches the candidate: the problem's Model and each
candidate's ModelNew are built with the same seed, each candidate is called three times (compiles
happen there), then reference and candidate are timed alternately with CUDA events around one
forward, the L2 flushed before every call (a 256 MiB write, as KernelBench's harness does),
autograd recording unless --no-grad (the judge's default mode); --first-no-grad calls each
candidate under no_grad first, as verification does. Prints one JSON line per candidate:
{"candidate", "ref_ms", "cand_ms", "speedup", "runs"} (medians), or {"candidate", "error"}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from typing import Any, Callable, Dict, List

import torch

SEED_INIT = 42
SEED_INPUTS = 1_000_003


def load(path: str) -> Dict[str, Any]:
    scope: Dict[str, Any] = {"__name__": "plain_" + path.replace("/", "_"), "__file__": path}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), scope)
    return scope


def on_gpu(value: Any) -> Any:
    return value.cuda() if isinstance(value, torch.Tensor) else value


def build(cls: Any, init: List[Any]) -> torch.nn.Module:
    torch.manual_seed(SEED_INIT)
    return cls(*init).cuda()


def timed(fn: Callable[[], Any], flush: torch.Tensor) -> float:
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush.fill_(0x5A)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end))


def spin_up(seconds: float = 0.1) -> None:
    a = torch.randn(2048, 2048, device="cuda")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(16):
            torch.mm(a, a)
        torch.cuda.synchronize()


def time_pair(ref: Callable[[], Any], cand: Callable[[], Any], runs: int, grad: bool,
              first_no_grad: bool = False) -> Dict[str, float]:
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    ref_ms: List[float] = []
    cand_ms: List[float] = []
    if first_no_grad:  # as the judge's verification trials (and KernelBench's) call it first
        with torch.no_grad():
            for _ in range(3):
                cand()
    with torch.set_grad_enabled(grad):
        for _ in range(3):
            ref()
            cand()
        for k in range(runs):
            order = ((ref, ref_ms), (cand, cand_ms)) if k % 2 == 0 else ((cand, cand_ms), (ref, ref_ms))
            for fn, samples in order:
                samples.append(timed(fn, flush))
    r, c = statistics.median(ref_ms), statistics.median(cand_ms)
    return {"ref_ms": r, "cand_ms": c, "speedup": r / c, "runs": runs}


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-grad", action="store_true")
    ap.add_argument("--first-no-grad", action="store_true",
                    help="call each candidate three times under no_grad before timing, as verification does")
    ap.add_argument("--spin-up", action="store_true",
                    help="run matrix products for 0.1 s before anything else, as the judge does before timing")
    ap.add_argument("--churn-gib", type=float, default=0.0,
                    help="allocate, fill and free this many GiB before each candidate's first call, as the "
                         "judge's memory poisoning does before every verification call")
    args = ap.parse_args(argv)
    if args.spin_up:
        spin_up()
    problem = load(args.problem)
    init = list(problem["get_init_inputs"]())
    ref_model = build(problem["Model"], init)
    torch.manual_seed(SEED_INPUTS)
    inputs = [on_gpu(x) for x in problem["get_inputs"]()]
    for path in args.candidates:
        try:
            cand_model = build(load(path)["ModelNew"], init)
            cand_model.load_state_dict(ref_model.state_dict())
            if args.churn_gib > 0:
                torch.empty(int(args.churn_gib * (1 << 30)) // 4, device="cuda").fill_(float("nan"))
                torch.cuda.synchronize()
            row = time_pair(lambda: ref_model(*inputs), lambda: cand_model(*inputs), args.runs, not args.no_grad,
                            args.first_no_grad)
            print(json.dumps({"candidate": path, **row}), flush=True)
            del cand_model
        except Exception as exc:  # noqa: BLE001 - one failing candidate must not cost the others
            traceback.print_exc()
            print(json.dumps({"candidate": path, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
