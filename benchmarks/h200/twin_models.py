"""Do two identical models of one problem time alike in a plain process?

    python3 benchmarks/h200/twin_models.py PROBLEM.py [--rounds N] [--twins K] [--flush-mb M]

The judge read level1/40_LayerNorm against itself at 1.014 and 1.015 (calls 105 and 107, H100):
the reference contender 8.185 ms, the same file as candidate 8.066 ms, each within 0.2 % over 21
runs. No judge code is imported here. The problem's Model is built K times the way the judge
builds it (torch.manual_seed(42) before each, with the GPU as default device, training mode as
constructed), with one input set from get_inputs() under the same seed, and the K models are timed
in rounds, the order reversed every other round, with CUDA events around one forward, grad on (the
judge's default), and before each call an L2 flush and a device-side sleep of 200,000 cycles (about
0.1 ms), so that the host's way to the launch is not counted. Prints each model's median, p10 and
p90, its first parameter's address, and the largest ratio between two medians; then the same for
model 0 timed K times per round (a control: one object, so any spread there is not the models').
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
from typing import Any, Callable, List

import torch

SEED = 42


def load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("problem", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def build(module: Any) -> torch.nn.Module:
    torch.manual_seed(SEED)
    with torch.device("cuda"):  # as the judge builds it where it can (loader._build_on)
        return module.Model(*module.get_init_inputs()).cuda()


def time_once(fn: Callable[[], Any], flush: torch.Tensor) -> float:
    flush.fill_(1)
    torch.cuda._sleep(200_000)  # cycles: the host reaches the call while the device still sleeps
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    out = fn()
    end.record()
    end.synchronize()
    del out
    return start.elapsed_time(end)


def rounds(calls: List[Callable[[], Any]], n: int, flush: torch.Tensor) -> List[List[float]]:
    times: List[List[float]] = [[] for _ in calls]
    order = list(range(len(calls)))
    for i in range(n):
        for k in order if i % 2 == 0 else order[::-1]:
            times[k].append(time_once(calls[k], flush))
    return times


def report(title: str, models: List[torch.nn.Module], times: List[List[float]]) -> None:
    print(title)
    medians = []
    for k, (model, ms) in enumerate(zip(models, times)):
        ms = sorted(ms)
        medians.append(statistics.median(ms))
        first = next(model.parameters(), None)
        where = f"{first.data_ptr():#x}" if first is not None else "-"
        print(f"  model {k}: median {medians[-1]:.4f} ms, p10 {ms[len(ms) // 10]:.4f}, "
              f"p90 {ms[(9 * len(ms)) // 10]:.4f}, first parameter at {where}")
    print(f"  largest ratio of two medians: {max(medians) / min(medians):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--twins", type=int, default=2)
    parser.add_argument("--flush-mb", type=int, default=512)
    args = parser.parse_args()
    module = load(args.problem)
    models = [build(module) for _ in range(args.twins)]
    torch.manual_seed(SEED)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    flush = torch.empty(args.flush_mb << 20, dtype=torch.uint8, device="cuda")
    calls = [lambda m=m: m(*inputs) for m in models]
    for call in calls:  # warm-up: lazy initialisation, cuDNN's choices
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    report(f"{args.twins} models, {args.rounds} rounds:", models, rounds(calls, args.rounds, flush))
    same = [calls[0]] * args.twins
    report(f"model 0 timed {args.twins} times per round (control):", [models[0]] * args.twins,
           rounds(same, args.rounds, flush))


if __name__ == "__main__":
    main()
