"""Catching results remembered across calls (keyed on pointers or on cheap input fingerprints).

1. new values copied into the very buffers the candidate has seen (same pointers);
2. new buffers holding the same values permuted (same shapes, sums, extremes);
3. that permutation copied into the old buffers (same pointers and sums);
4. a small block of the old buffers replaced by other valid values (same pointers; a fingerprint
   of a few sampled elements, or of the buffers' ends, does not see it).
Each result is checked against eager's output for exactly those inputs, so that no check needs a
float64 reference. Permutations only move non-zero values among non-zero positions, within
chunks of the flattened tensor, so masks and triangular structure survive, and no index or
permutation tensor of the input's size is ever made.
"""

import random
from typing import Any, List, Optional

import torch

from .compare import Tol
from .memory import release_cached_blocks
from .poison import PoisonMode
from .session import Session
from .tensors import chunks, clone_all, copy_values_into, flat_tensors, map_tensors, same_values
from .verify import matches

STALE_SEED: int = 2_000_003
PROBE_SEED: int = 2_000_011
PROBE_FRACTION: float = 1 / 256


def _permuted(values: List[Any], shift_seed: int) -> List[Any]:
    rng = random.Random(shift_seed)

    def permute(t: torch.Tensor) -> torch.Tensor:
        out = t.detach().clone()
        if t.dtype == torch.bool or t.numel() < 2:
            return out
        flat = out.reshape(-1)
        for start, end in chunks(flat.numel()):
            piece = flat[start:end]
            mask = piece != 0
            vals = piece[mask]
            if vals.numel() >= 2:
                piece[mask] = torch.roll(vals, rng.randrange(1, vals.numel()))
        return out

    return map_tensors(values, permute)


def _differs(a: List[Any], b: List[Any]) -> bool:
    return any(not same_values(x, y) for x, y in zip(flat_tensors(a), flat_tensors(b)))


def _replace_block(buffers: List[Any], donor: List[Any], seed: int) -> bool:
    """A random contiguous block (PROBE_FRACTION of each floating tensor, whole rows of its last
    dimension where it has them) replaced by the donor's values at the same place."""
    rng = random.Random(seed)
    changed = False
    with torch.no_grad():
        for d, s in zip(flat_tensors(buffers), flat_tensors(donor)):
            if not d.is_floating_point() or d.shape != s.shape or d.numel() < 2 or not d.is_contiguous():
                continue
            row = d.shape[-1] if d.dim() > 1 else 1
            rows = d.numel() // row
            count = max(1, int(rows * PROBE_FRACTION))
            first = rng.randrange(0, rows - count + 1)
            lo, hi = first * row, (first + count) * row
            d.reshape(-1)[lo:hi].copy_(s.reshape(-1)[lo:hi])
            changed = True
    return changed


def run_staleness_checks(s: Session, tol: Tol, rel_l2_limit: float, buffers: Optional[List[Any]]) -> None:
    """tol: for a candidate against eager (compare.against_eager)."""
    if buffers is None:
        buffers = s.make_inputs(STALE_SEED - 1)
        s.call_candidate(buffers, STALE_SEED - 1, PoisonMode.NAN)  # the call a cache would remember
    failures: List[str] = []

    def check(inputs: List[Any], seed: int, what: str, eager: Optional[List[Any]] = None) -> List[Any]:
        """Judges the candidate on `inputs` against `eager`, eager's output for those values
        (computed here when not given); returns that output."""
        release_cached_blocks(s.device)
        raw = s.call_candidate(inputs, seed, PoisonMode.NAN)
        if eager is None:
            eager = s.call_eager(clone_all(inputs) if s.facts.ref_mutated_inputs else inputs, seed)
        if not matches(raw, eager, tol, s.req.atol, rel_l2_limit):
            failures.append(what)
        return eager

    fresh = s.make_inputs(STALE_SEED)
    if _differs(fresh, buffers) and copy_values_into(buffers, fresh):
        del fresh
        check(buffers, STALE_SEED, "new values written into the same input buffers")
    else:
        del fresh
    permuted = _permuted(buffers, STALE_SEED)
    if _differs(permuted, buffers):
        eager: Optional[List[Any]] = check(permuted, STALE_SEED,
                                           "new buffers with the same shapes and sums (values permuted)")
        if s.facts.ref_mutated_inputs:
            eager = None  # the candidate was to change those values, as the reference does
        if copy_values_into(buffers, permuted):
            del permuted
            # The values the check before judged: eager's output for them stands.
            check(buffers, STALE_SEED, "the same buffers refilled with permuted values (same pointers and sums)", eager)
        del eager
    donor = s.make_inputs(PROBE_SEED)
    probe = _replace_block(buffers, donor, PROBE_SEED)
    del donor
    if probe:
        check(buffers, PROBE_SEED, "a small block of the same buffers changed (same pointers, most values kept)")
    if failures:
        s.resp.add_flag("result_cache")
        s.resp.add_note("stale result for: " + "; ".join(failures))
