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


@dataclass
class _Errors:
    """|c - r| where both are finite (0 elsewhere), and what the non-finite values say."""

    c: torch.Tensor
    r: torch.Tensor
    err: torch.Tensor
    abs_r: torch.Tensor  # |r| where r is finite, 0 elsewhere
    signed: torch.Tensor  # c - r where both are finite, 0 elsewhere
    r_safe: torch.Tensor  # r where finite, 0 elsewhere
    special_bad: Optional[torch.Tensor]  # None: every value on both sides is finite
    bad_nonfinite: bool
    special_any: bool

    def ref_norm(self) -> float:
        return math.sqrt(float(_sum_sq(self.abs_r)))

    def err_norm(self) -> float:
        return math.sqrt(float(_sum_sq(self.err)))


def _sum_sq(t: torch.Tensor) -> torch.Tensor:
    flat = t.reshape(-1)
    return torch.dot(flat, flat)  # one pass, no temporary


def _all_finite(t: torch.Tensor) -> bool:
    # A NaN or an infinity makes the sum non-finite (so can an overflow, which only costs the
    # slow path): one reduction instead of a full boolean mask.
    return math.isfinite(float(t.sum()))


def _errors(cand: torch.Tensor, ref: torch.Tensor) -> _Errors:
    c = as_f64(cand)
    r = as_f64(ref).to(c.device)
    if _all_finite(c) and _all_finite(r):
        # The common case, in fewer passes over the data and fewer temporaries: no masking.
        signed = torch.sub(c, r)
        return _Errors(c, r, signed.abs(), r.abs(), signed, r, None, False, False)
    c_fin, r_fin = torch.isfinite(c), torch.isfinite(r)
    both = c_fin & r_fin
    same_special = (torch.isnan(c) & torch.isnan(r)) | (~r_fin & ~torch.isnan(r) & (c == r))
    special_bad = ~both & ~same_special
    zero = torch.zeros((), dtype=torch.float64, device=c.device)
    signed = torch.where(both, c - r, zero)
    return _Errors(c, r, signed.abs(), torch.where(r_fin, r.abs(), zero), signed, torch.where(r_fin, r, zero),
                   special_bad, bool((r_fin & ~c_fin).any()), bool(special_bad.any()))


def _ratio(e: _Errors, tol: Tol) -> torch.Tensor:
    denom = e.abs_r.mul(tol.rtol).add_(tol.atol)
    ratio = torch.div(e.err, denom, out=denom)  # in place: one temporary fewer
    if e.special_bad is not None:
        ratio.masked_fill_(e.special_bad, math.inf)
    return ratio


def _max_scaled(err: torch.Tensor, abs_r: torch.Tensor, floor: float, scratch: Optional[torch.Tensor] = None) -> float:
    """max(err / (abs_r + floor)), through one scratch buffer instead of two temporaries."""
    buf = torch.add(abs_r, floor, out=scratch) if scratch is not None else abs_r.add(floor)
    return float(torch.div(err, buf, out=buf).max())


def _rel_l2(err_norm: float, ref_norm: float) -> float:
    return err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)


def diff(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_floor: float) -> OutputDiff:
    if cand.numel() == 0:
        return OutputDiff(0.0, 0.0, 0.0, 0.0, [], None, None, False, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    e = _errors(cand, ref)
    ratio = _ratio(e, tol)
    flat = int(ratio.reshape(-1).argmax())
    worst_ratio = float(ratio.reshape(-1)[flat])
    # ratio is not needed any more: its memory is the scratch buffer for max_rel.
    max_rel = math.inf if e.special_any else _max_scaled(e.err, e.abs_r, rel_floor, ratio)
    ref_norm, err_norm = e.ref_norm(), e.err_norm()
    max_abs = float(e.err.max())
    ref_max = float(e.abs_r.max())
    err_sum = float(e.err.sum())
    n = e.c.numel()
    if err_sum > 0:
        offset = abs(float(e.signed.sum()))
        scaling = abs(float(torch.dot(e.signed.reshape(-1), torch.sign(e.r_safe).reshape(-1))))
        bias_ratio = max(offset, scaling) / err_sum
    else:
        bias_ratio = 0.0
    return OutputDiff(
        max_abs=math.inf if e.special_any else max_abs,
        max_rel=max_rel,
        rel_l2=_rel_l2(err_norm, ref_norm),
        worst_ratio=worst_ratio,
        worst_index=unravel(flat, tuple(e.c.shape)),
        worst_cand=float(e.c.reshape(-1)[flat]),
        worst_ref=float(e.r.reshape(-1)[flat]),
        bad_nonfinite=e.bad_nonfinite,
        special_mismatch=e.special_any,
        ref_norm=ref_norm,
        zero_fraction=1.0 - int(torch.count_nonzero(e.c)) / n,
        ref_zero_fraction=1.0 - int(torch.count_nonzero(e.r)) / n,
        scale_rel=max_abs / ref_max if ref_max > 0 else math.inf,
        widespread_fraction=int(torch.count_nonzero(e.err > 1e-5 * ref_max)) / n,
        bias_ratio=bias_ratio,
    )


def passes(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_l2_limit: float) -> bool:
    """diff(cand, ref, tol, ...).passes(rel_l2_limit), without the statistics it does not need."""
    if cand.numel() == 0:
        return True
    e = _errors(cand, ref)
    if e.special_any or float(_ratio(e, tol).max()) > 1.0:
        return False
    ref_norm = e.ref_norm()
    return ref_norm == 0.0 or _rel_l2(e.err_norm(), ref_norm) <= rel_l2_limit


@dataclass
class EagerError:
    """PyTorch eager's own error against the reference, for the tolerance policy and the report."""

    policy_err: float  # the smallest t with |eager - r| <= t + t |r| everywhere both are finite
    max_abs: float
    max_rel: float
    rel_l2: float
    ref_norm: float


def eager_errors(eager: torch.Tensor, ref: torch.Tensor, rel_floor: float) -> EagerError:
    """eager_error() and diff()'s max_abs, max_rel, rel_l2 and ref_norm, from one pass of setup."""
    if eager.numel() == 0:
        return EagerError(0.0, 0.0, 0.0, 0.0, 0.0)
    e = _errors(eager, ref)
    ref_norm = e.ref_norm()
    scratch = torch.empty_like(e.err)
    return EagerError(
        policy_err=_max_scaled(e.err, e.abs_r, 1.0, scratch),
        max_abs=math.inf if e.special_any else float(e.err.max()),
        max_rel=math.inf if e.special_any else _max_scaled(e.err, e.abs_r, rel_floor, scratch),
        rel_l2=_rel_l2(e.err_norm(), ref_norm),
        ref_norm=ref_norm,
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
