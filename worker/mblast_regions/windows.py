"""Region windows: runs of consecutive ops in which every op after the first reads an op before it
in the window, closed once they hold their share of the time or their size."""

from typing import Dict, List

from .cut import Window, make_window
from .graph import RegionGraph

TARGET_SHARE = 0.25  # a window closes once it holds this share of the model's time
MAX_OPS = 8
MIN_SHARE = 0.05  # a smaller window is left to the rest of the model


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
    order = [(op.name, op.reads) for op in graph.ops]
    windows = [make_window(run, order, graph.outputs, sum(shares.get(name, 0.0) for name in run)) for run in runs]
    kept = [w for w in windows if w.share >= min_share]
    return sorted(kept, key=lambda w: w.share, reverse=True)
