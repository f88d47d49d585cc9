"""Region windows: runs of consecutive ops in which every op after the first reads an op before it
in the window, closed once they hold their share of the time or their size."""

from dataclasses import dataclass
from typing import Dict, List, Set

from .graph import RegionGraph

TARGET_SHARE = 0.25  # a window closes once it holds this share of the model's time
MAX_OPS = 8
MIN_SHARE = 0.05  # a smaller window is left to the rest of the model


@dataclass
class Window:
    ops: List[str]  # consecutive in the graph's order
    share: float  # of the measured time
    inputs: List[str]  # values it reads from outside (graph inputs, earlier ops)
    outputs: List[str]  # its values read after it, or returned by the model

    def to_json(self) -> Dict[str, object]:
        return {"ops": self.ops, "share": self.share, "inputs": self.inputs, "outputs": self.outputs}


def region_windows(graph: RegionGraph, shares: Dict[str, float], target_share: float = TARGET_SHARE,
                   max_ops: int = MAX_OPS, min_share: float = MIN_SHARE) -> List[Window]:
    """The windows that hold at least min_share of the time, largest first."""
    runs: List[List[str]] = []
    current: List[str] = []
    held = 0.0
    for op in graph.ops:
        connected = bool(current) and any(name in current for name in op.reads)
        if current and (not connected or held >= target_share or len(current) >= max_ops):
            runs.append(current)
            current, held = [], 0.0
        current.append(op.name)
        held += shares.get(op.name, 0.0)
    if current:
        runs.append(current)
    windows = [_window(graph, run, shares) for run in runs]
    kept = [w for w in windows if w.share >= min_share]
    return sorted(kept, key=lambda w: w.share, reverse=True)


def _window(graph: RegionGraph, ops: List[str], shares: Dict[str, float]) -> Window:
    inside: Set[str] = set(ops)
    inputs: List[str] = []
    for name in ops:
        for read in graph.op(name).reads:
            if read not in inside and read not in inputs:
                inputs.append(read)
    last = max(i for i, op in enumerate(graph.ops) if op.name in inside)
    read_later = {read for op in graph.ops[last + 1:] for read in op.reads} | set(graph.outputs)
    outputs = [name for name in ops if name in read_later]
    return Window(ops, sum(shares.get(name, 0.0) for name in ops), inputs, outputs)
