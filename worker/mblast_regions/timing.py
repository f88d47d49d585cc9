"""Each op's measured time on the example inputs: the graph run node by node, the device
synchronized around every op so that its time is its own."""

import statistics
import time
from typing import Any, Dict, List, Sequence

import torch
from torch.fx import GraphModule, Interpreter, Node


class _TimedRun(Interpreter):
    def __init__(self, module: GraphModule, sync: bool) -> None:
        super().__init__(module)
        self.sync = sync
        self.seconds: Dict[str, float] = {}

    def run_node(self, n: Node) -> Any:
        if n.op not in ("call_module", "call_function", "call_method"):
            return super().run_node(n)
        if self.sync:
            torch.cuda.synchronize()
        start = time.perf_counter()
        result = super().run_node(n)
        if self.sync:
            torch.cuda.synchronize()
        self.seconds[n.name] = time.perf_counter() - start
        return result


def op_times(module: GraphModule, inputs: Sequence[Any], repeats: int = 5) -> Dict[str, float]:
    """Seconds per op (the median of `repeats` runs after one warm-up run)."""
    sync = any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs)
    samples: Dict[str, List[float]] = {}
    with torch.no_grad():
        for i in range(repeats + 1):
            run = _TimedRun(module, sync)
            run.run(*inputs)
            if i == 0:
                continue
            for name, seconds in run.seconds.items():
                samples.setdefault(name, []).append(seconds)
    return {name: statistics.median(values) for name, values in samples.items()}


def time_shares(seconds: Dict[str, float]) -> Dict[str, float]:
    total = sum(seconds.values())
    if total <= 0:
        return {name: 1.0 / len(seconds) for name in seconds} if seconds else {}
    return {name: value / total for name, value in seconds.items()}
