"""Region windows: runs of consecutive, connected ops. The ops of one block of the model (a
submodule's own ops, layer1.0 of a ResNet with its shortcut) make one window, so that the same
block at the same shapes is the same region wherever it repeats (identity.py); the model's own
ops between blocks are closed once they hold their share of the time or their size."""

from typing import Dict, List, Sequence

from .cut import Window, disconnected_ops, make_window
from .graph import OpNode, RegionGraph

TARGET_SHARE = 0.25  # a window of the model's own ops closes once it holds this share of the time
MAX_OPS = 8
MAX_BLOCK_OPS = 12  # a residual block with its shortcut (9 ops in a ResNet) stays whole
MIN_SHARE = 0.05  # a smaller window is left to the rest of the model


def region_windows(graph: RegionGraph, shares: Dict[str, float], target_share: float = TARGET_SHARE,
                   max_ops: int = MAX_OPS, min_share: float = MIN_SHARE,
                   max_block_ops: int = MAX_BLOCK_OPS) -> List[Window]:
    """The windows that hold at least min_share of the time, largest first."""
    owners = block_owners(graph.ops)
    reads = {op.name: op.reads for op in graph.ops}
    runs: List[List[str]] = []
    current: List[str] = []
    held = 0.0
    for op in graph.ops:
        if current and not _continues(current, op, owners, held, target_share, max_ops, max_block_ops):
            runs.extend(_connected_runs(current, reads))
            current, held = [], 0.0
        current.append(op.name)
        held += shares.get(op.name, 0.0)
    if current:
        runs.extend(_connected_runs(current, reads))
    order = [(op.name, op.reads) for op in graph.ops]
    windows = [make_window(run, order, graph.outputs, sum(shares.get(name, 0.0) for name in run)) for run in runs]
    kept = [w for w in windows if w.share >= min_share]
    return sorted(kept, key=lambda w: w.share, reverse=True)


def block_owners(ops: Sequence[OpNode]) -> Dict[str, str]:
    """Each op's block: the path of the submodule whose own forward calls it ("layer1.0" for
    layer1.0.conv1 and for the residual add in layer1.0's forward; "" for the model's own ops and
    those of its nn.Sequential containers)."""
    return {op.name: op.owner for op in ops}


def _within(owner: str, block: str) -> bool:
    return block != "" and (owner == block or owner.startswith(block + "."))


def _continues(current: List[str], op: OpNode, owners: Dict[str, str], held: float, target_share: float,
               max_ops: int, max_block_ops: int) -> bool:
    block = owners[current[0]]
    if block:  # a block's window takes its ops, nested blocks' included, whatever their share
        return len(current) < max_block_ops and _within(owners[op.name], block)
    if len(current) >= max_ops:
        return False
    if owners[op.name]:  # a block starts
        return False
    return held < target_share and any(name in current for name in op.reads)


def _connected_runs(run: List[str], reads: Dict[str, Sequence[str]]) -> List[List[str]]:
    """The run as it is where it is connected (a block with its shortcut); else cut where an op
    reads none of the ops before it in its piece."""
    if not disconnected_ops(run, reads):
        return [run]
    pieces: List[List[str]] = []
    for name in run:
        if pieces and any(read in pieces[-1] for read in reads[name]):
            pieces[-1].append(name)
        else:
            pieces.append([name])
    return pieces
