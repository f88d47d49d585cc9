"""Catching results cached across calls (keyed on pointers or on cheap input fingerprints).

1. new values copied into the very buffers the candidate has seen (same pointers);
2. new buffers holding the same values permuted (same shapes, sums, extremes);
3. that permutation copied into the old buffers (same pointers and sums).
Each result is checked against a reference computed for exactly those inputs.
Permutations only move non-zero values among non-zero positions, so masks and
triangular structure in the inputs survive.
"""

from typing import Any, List, Optional

import torch

from .compare import Tol
from .poison import PoisonMode
from .session import Session
from .tensors import clone_all, flat_tensors, map_tensors, same_values
from .verify import matches

STALE_SEED: int = 2_000_003
_PERMUTE_SEED: int = 12345


def _permuted(values: List[Any]) -> List[Any]:
    gen = torch.Generator().manual_seed(_PERMUTE_SEED)

    def permute(t: torch.Tensor) -> torch.Tensor:
        if t.dtype == torch.bool or t.numel() < 2:
            return t.clone()
        flat = t.detach().reshape(-1).clone()
        where = (flat != 0).nonzero().reshape(-1)
        if where.numel() < 2:
            return flat.reshape(t.shape)
        order = torch.randperm(where.numel(), generator=gen).to(where.device)
        flat[where] = flat[where[order]]
        return flat.reshape(t.shape)

    return map_tensors(values, permute)


def _differs(a: List[Any], b: List[Any]) -> bool:
    return any(not same_values(x, y) for x, y in zip(flat_tensors(a), flat_tensors(b)))


def _copy_into(buffers: List[Any], values: List[Any]) -> bool:
    dst, src = flat_tensors(buffers), flat_tensors(values)
    if len(dst) != len(src) or any(d.shape != s.shape or d.dtype != s.dtype for d, s in zip(dst, src)):
        return False
    with torch.no_grad():
        for d, s in zip(dst, src):
            d.copy_(s)
    return True


def run_staleness_checks(s: Session, tol: Tol, rel_l2_limit: float, buffers: Optional[List[Any]]) -> None:
    if buffers is None:
        buffers = s.make_inputs(STALE_SEED - 1)
        s.call_candidate(buffers, STALE_SEED - 1, PoisonMode.NAN)  # the call a cache would remember
    failures: List[str] = []

    def check(inputs: List[Any], expected_inputs: List[Any], seed: Optional[int], what: str) -> None:
        raw = s.call_candidate(inputs, seed if seed is not None else STALE_SEED, PoisonMode.NAN)
        ref = s.refs.get(seed, expected_inputs)
        if not matches(raw, ref.outputs, tol, s.req.atol, rel_l2_limit):
            failures.append(what)

    fresh = s.make_inputs(STALE_SEED)
    if _differs(fresh, buffers) and _copy_into(buffers, fresh):
        check(buffers, fresh, STALE_SEED, "new values written into the same input buffers")
    current = clone_all(buffers)
    permuted = _permuted(current)
    if _differs(permuted, current):
        check(clone_all(permuted), permuted, None, "new buffers with the same shapes and sums (values permuted)")
        if _copy_into(buffers, permuted):
            check(buffers, permuted, None, "the same buffers refilled with permuted values (same pointers and sums)")
    if failures:
        s.resp.add_flag("result_cache")
        s.resp.add_note("stale result for: " + "; ".join(failures))
