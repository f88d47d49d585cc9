"""Error metrics against the float64 reference, and the tolerance policy (DESIGN.md §3).

max_rel_err is |c - r| / (|r| + atol): relative where values are large, absolute-scaled
near zero, so it stays finite on outputs with exact zeros.
"""

import math
from dataclasses import dataclass
from typing import List, Optional

import torch

from .poison import SENTINEL
from .tensors import unravel

# An output with relative L2 error above this fails even if every element is inside
# atol: that is what catches "all zeros" on problems whose values are below atol.
REL_L2_LIMIT: float = 1e-2
EAGER_WIDEN_FACTOR: float = 1.5
PRECISION_DROP_RANGE = (1e-4, 5e-2)


@dataclass
class Tol:
    atol: float
    rtol: float


@dataclass
class OutputDiff:
    max_abs: float
    max_rel: float
    rel_l2: float
    worst_ratio: float  # max |c-r| / (atol + rtol |r|): > 1 fails
    worst_index: List[int]
    worst_cand: Optional[float]
    worst_ref: Optional[float]
    bad_nonfinite: bool  # NaN/Inf in the candidate where the reference has a finite value
    special_mismatch: bool  # any non-finite disagreement, either side
    ref_norm: float
    zero_fraction: float
    ref_zero_fraction: float
    # The shape of the error, to recognise reduced precision: small relative to the output's
    # scale, spread over many elements, and unbiased (rounding goes both ways, a bug rarely does).
    scale_rel: float  # max |c-r| / max |r|
    widespread_fraction: float  # elements off by more than 1e-5 of the output's scale
    bias_ratio: float  # max(|sum(c-r)|, |sum((c-r) sign r)|) / sum|c-r|: offsets and scalings

    def looks_like_reduced_precision(self) -> bool:
        return (not self.special_mismatch and PRECISION_DROP_RANGE[0] <= self.scale_rel <= PRECISION_DROP_RANGE[1]
                and self.widespread_fraction >= 0.1 and self.bias_ratio < 0.5)

    def passes(self, rel_l2_limit: float) -> bool:
        if self.special_mismatch or self.worst_ratio > 1.0:
            return False
        return self.ref_norm == 0.0 or self.rel_l2 <= rel_l2_limit


def as_f64(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.to(torch.float64)


def diff(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_floor: float) -> OutputDiff:
    c = as_f64(cand)
    r = as_f64(ref).to(c.device)
    if c.numel() == 0:
        return OutputDiff(0.0, 0.0, 0.0, 0.0, [], None, None, False, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    c_fin, r_fin = torch.isfinite(c), torch.isfinite(r)
    both = c_fin & r_fin
    same_special = (torch.isnan(c) & torch.isnan(r)) | (~r_fin & ~torch.isnan(r) & (c == r))
    special_bad = ~both & ~same_special
    zero = torch.zeros((), dtype=torch.float64, device=c.device)
    err = torch.where(both, (c - r).abs(), zero)
    abs_r = torch.where(r_fin, r.abs(), zero)
    ratio = err / (tol.atol + tol.rtol * abs_r)
    ratio = torch.where(special_bad, torch.full_like(ratio, math.inf), ratio)
    flat = int(ratio.reshape(-1).argmax())
    rel = err / (abs_r + rel_floor)
    ref_norm = float(abs_r.pow(2).sum().sqrt())
    err_norm = float(err.pow(2).sum().sqrt())
    special_any = bool(special_bad.any())
    worst_c = float(c.reshape(-1)[flat])
    worst_r = float(r.reshape(-1)[flat])
    max_abs = float(err.max())
    ref_max = float(abs_r.max())
    signed = torch.where(both, c - r, zero)
    r_safe = torch.where(r_fin, r, zero)
    err_sum = float(err.sum())
    return OutputDiff(
        max_abs=math.inf if special_any else max_abs,
        max_rel=math.inf if special_any else float(rel.max()),
        rel_l2=err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf),
        worst_ratio=float(ratio.reshape(-1)[flat]),
        worst_index=unravel(flat, tuple(c.shape)),
        worst_cand=worst_c,
        worst_ref=worst_r,
        bad_nonfinite=bool((r_fin & ~c_fin).any()),
        special_mismatch=special_any,
        ref_norm=ref_norm,
        zero_fraction=float((c == 0).double().mean()),
        ref_zero_fraction=float((r == 0).double().mean()),
        scale_rel=max_abs / ref_max if ref_max > 0 else math.inf,
        widespread_fraction=float((err > 1e-5 * ref_max).double().mean()),
        bias_ratio=max(abs(float(signed.sum())), abs(float((signed * torch.sign(r_safe)).sum()))) / err_sum
        if err_sum > 0 else 0.0,
    )


def eager_error(eager: torch.Tensor, ref: torch.Tensor) -> float:
    """The smallest t with |eager - r| <= t + t |r| everywhere both are finite."""
    e = as_f64(eager)
    r = as_f64(ref).to(e.device)
    if e.numel() == 0:
        return 0.0
    both = torch.isfinite(e) & torch.isfinite(r)
    zero = torch.zeros((), dtype=torch.float64, device=e.device)
    t = torch.where(both, (e - r).abs() / (1.0 + r.abs()), zero)
    return float(t.max())


def widened(base: Tol, eager_err: float, policy: str) -> Tol:
    if policy == "strict":
        return Tol(base.atol, base.rtol)
    return Tol(max(base.atol, EAGER_WIDEN_FACTOR * eager_err), max(base.rtol, EAGER_WIDEN_FACTOR * eager_err))


def poison_dependent_fraction(a: torch.Tensor, b: torch.Tensor, ref: torch.Tensor, tol: Tol) -> float:
    """Share of elements that carry the poison: NaN from a call made over NaN-poisoned
    memory (a), the sentinel from one over sentinel-poisoned memory (b). Elements the
    candidate never wrote. Merely different results (a stale cache) do not count."""
    if a.shape != b.shape or a.numel() == 0:
        return 0.0
    if not (a.is_floating_point() or a.is_complex()):
        return float((a != b).double().mean())
    if a.dtype == torch.float32 and b.dtype == torch.float32:
        dependent = (torch.isnan(a) & ~torch.isnan(b)) | ((b == SENTINEL) & (a != SENTINEL))
        return float(dependent.double().mean())
    # Other float types read the float32 poison pattern as assorted values: fall back to
    # "differs between the two calls" by far more than the tolerance.
    a64, b64 = as_f64(a), as_f64(b)
    r64 = as_f64(ref).to(a64.device)
    zero = torch.zeros((), dtype=torch.float64, device=a64.device)
    scale = tol.atol + tol.rtol * torch.where(torch.isfinite(r64), r64.abs(), zero)
    both = torch.isfinite(a64) & torch.isfinite(b64)
    dependent = (torch.isnan(a64) != torch.isnan(b64)) | (both & ((a64 - b64).abs() > scale))
    return float(dependent.double().mean())
