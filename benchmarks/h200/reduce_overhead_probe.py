"""Why torch.compile(mode="reduce-overhead") is slow on a problem: its variants in a plain process.

    python3 reduce_overhead_probe.py PROBLEM.py [--runs N]

No judge code is imported. For the problem's Model (built as the judge builds it: the seed, on the
GPU, the module's default training mode) times eager and reduce-overhead compiled variants with
CUDA events around one forward (median of N, L2 not flushed: the question is the host path):
grad on and off, with and without torch.compiler.cudagraph_mark_step_begin() before each call,
and the model in eval mode. Each compiled variant is timed twice: on the same inputs every call,
and on a new input set each call, made outside the timed span (what the judge's fresh-input probe
does, which took a reduce-overhead built-in for a memo on SOL-ExecBench's rmsnorm, call 100).
After each variant prints how many CUDA graphs Inductor recorded and replayed and the reasons it
gave for skipping CUDA graphs (Dynamo's counters), one JSON line each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any, Callable, Dict, List

import torch

SEED = 42


def load(path: str) -> Dict[str, Any]:
    scope: Dict[str, Any] = {"__name__": "probe_problem"}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), scope)
    return scope


def time_ms(fn: Callable[[], Any], runs: int, before: Callable[[], None] = lambda: None) -> float:
    """Median of `runs` timed calls after three untimed ones; `before` runs ahead of each call,
    outside the timed span."""
    for _ in range(3):
        before()
        fn()
    samples: List[float] = []
    for _ in range(runs):
        before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def counters() -> Dict[str, Any]:
    from torch._dynamo.utils import counters as dynamo_counters

    picked: Dict[str, Any] = {}
    for group, values in dynamo_counters.items():
        for key, count in values.items():
            text = str(key)
            if "cudagraph" in text.lower() or group in ("inductor_cudagraph", "stats"):
                picked[f"{group}:{text[:160]}"] = count
    return picked


def fresh_inputs(problem: Dict[str, Any]) -> List[Any]:
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem["get_inputs"]()]


def variant(problem: Dict[str, Any], inputs: List[Any], *, grad: bool, mark: bool, eval_mode: bool,
            runs: int) -> Dict[str, Any]:
    torch._dynamo.reset()
    from torch._dynamo.utils import counters as dynamo_counters

    dynamo_counters.clear()
    torch.manual_seed(SEED)
    model = problem["Model"](*problem["get_init_inputs"]()).cuda()
    if eval_mode:
        model.eval()
    compiled = torch.compile(model, mode="reduce-overhead")

    def call_on(args: List[Any]) -> Any:
        if mark:
            torch.compiler.cudagraph_mark_step_begin()
        out = compiled(*args)
        return out.clone() if isinstance(out, torch.Tensor) else out

    def eager() -> Any:
        return model(*inputs)

    unseen: List[List[Any]] = [inputs]  # replaced by a new set before each call: one set at a time

    def new_set() -> None:
        unseen[0] = []
        unseen[0] = fresh_inputs(problem)

    torch.manual_seed(SEED + 2)
    with torch.set_grad_enabled(grad):
        eager_ms = time_ms(eager, runs)
        compiled_ms = time_ms(lambda: call_on(inputs), runs)
        fresh_ms = time_ms(lambda: call_on(unseen[0]), runs, before=new_set)
    return {"grad": grad, "mark_step": mark, "eval": eval_mode, "eager_ms": round(eager_ms, 4),
            "compiled_ms": round(compiled_ms, 4), "speedup": round(eager_ms / compiled_ms, 3),
            "compiled_fresh_inputs_ms": round(fresh_ms, 4), "counters": counters()}


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    problem = load(args.problem)
    torch.manual_seed(SEED + 1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem["get_inputs"]()]
    for grad, mark, eval_mode in ((True, False, False), (True, True, False), (False, False, False),
                                  (False, True, False), (True, True, True)):
        try:
            row = variant(problem, inputs, grad=grad, mark=mark, eval_mode=eval_mode, runs=args.runs)
        except Exception as exc:  # noqa: BLE001 - one failing variant must not hide the others
            row = {"grad": grad, "mark_step": mark, "eval": eval_mode, "error": f"{type(exc).__name__}: {exc}"[:400]}
        print(json.dumps({"problem": args.problem, **row}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
