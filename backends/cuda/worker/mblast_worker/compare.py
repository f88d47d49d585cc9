"""Error metrics against the float64 reference, and the tolerance policy (DESIGN.md §3).

Comparisons stream: an output is compared chunk by chunk (CHUNK_ELEMENTS at a time), so that no
float64 copy of a whole output, nor any full-size temporary, is ever made. KernelBench outputs
reach 2e9 elements; a whole-tensor comparison in float64 would need several times the memory
the problem itself uses.

max_rel_err is |c - r| / (|r| + atol): relative where values are large, absolute-scaled
near zero, so it stays finite on outputs with exact zeros.
"""

import math
import struct
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence, Tuple

import torch

from .tensors import unravel

# An output with relative L2 error above this fails even if every element is inside
# atol: that is what catches "all zeros" on problems whose values are below atol.
REL_L2_LIMIT: float = 1e-2
EAGER_WIDEN_FACTOR: float = 1.5
PRECISION_DROP_RANGE = (1e-4, 5e-2)
CHUNK_ELEMENTS: int = 1 << 22  # 4 Mi elements: 32 MiB per float64 temporary


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
    policy_err: float = 0.0  # the smallest t with |c - r| <= t + t |r| where both are finite
    poison_count: int = 0  # elements holding the bit pattern the memory was poisoned with
    digest: Tuple[float, float, float] = (0.0, 0.0, 0.0)  # of the candidate's values (tensors.digest)
    numel: int = 0
    ref_max: float = 0.0

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


def flat_view(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view of a dense tensor's values in row-major order (complex as pairs of reals)."""
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.reshape(-1)


def chunks(n: int, size: int = CHUNK_ELEMENTS) -> Iterator[Tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


# Bit patterns the poisoner writes (poison.py fills float32 words): what an element never written
# holds, per element width. A width-2 element sees either half of the word, a width-8 one two words.
def _poison_patterns(word: int, width: int) -> List[int]:
    if width == 4:
        return [word]
    if width == 2:
        return [word & 0xFFFF, word >> 16]
    if width == 8:
        return [word | (word << 32)]
    if width == 1:
        return sorted({(word >> s) & 0xFF for s in (0, 8, 16, 24)})
    return []


_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _signed(value: int, width: int) -> int:
    bits = 8 * width
    if width == 1:
        return value
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def poison_word(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def count_poison(chunk: torch.Tensor, word: int) -> int:
    """Elements of a flat chunk whose bits are what poisoning with the float32 word left there."""
    if chunk.dtype == torch.bool:
        chunk = chunk.view(torch.uint8)
    width = chunk.element_size()
    if width not in _INT_VIEW:
        return 0
    bits = chunk.view(_INT_VIEW[width])
    hits = None
    for pattern in _poison_patterns(word, width):
        eq = bits == _signed(pattern, width)
        hits = eq if hits is None else hits | eq
    return int(hits.sum()) if hits is not None else 0


@dataclass
class DiffAccumulator:
    """diff() over one output, fed in order by chunks of its flattened values."""

    tol: Tol
    rel_floor: float
    shape: Tuple[int, ...]
    scale_hint: Optional[float] = None  # max |ref| when known ahead (for widespread_fraction)
    poison: Optional[int] = None  # float32 word to count (poison_word), or None
    n: int = 0
    worst_ratio: float = -1.0
    worst_flat: int = 0
    worst_cand: Optional[float] = None
    worst_ref: Optional[float] = None
    max_rel: float = 0.0
    max_abs: float = 0.0
    policy_err: float = 0.0
    err_sq: float = 0.0
    ref_sq: float = 0.0
    ref_max: float = 0.0
    err_sum: float = 0.0
    signed_sum: float = 0.0
    scaling: float = 0.0
    nonzero_c: int = 0
    nonzero_r: int = 0
    widespread: int = 0
    bad_nonfinite: bool = False
    special_any: bool = False
    poison_count: int = 0
    sums: List[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])

    def add(self, cand: torch.Tensor, ref: torch.Tensor) -> None:
        """cand: a flat chunk of the candidate's output (any dtype); ref: the same elements of the
        reference (any floating dtype, any device)."""
        if self.poison is not None:
            self.poison_count += count_poison(cand, self.poison)
        c = cand.to(torch.float64)
        r = ref.to(device=c.device, dtype=torch.float64)
        offset = self.n
        self.n += c.numel()
        if c.numel() == 0:
            return
        self._digest(c, offset)
        self.nonzero_c += int(torch.count_nonzero(c))
        self.nonzero_r += int(torch.count_nonzero(r))
        finite = math.isfinite(float(c.sum())) and math.isfinite(float(r.sum()))
        if finite:
            signed = c - r
            abs_r = r.abs()
        else:
            c_fin, r_fin = torch.isfinite(c), torch.isfinite(r)
            both = c_fin & r_fin
            same_special = (torch.isnan(c) & torch.isnan(r)) | (~r_fin & ~torch.isnan(r) & (c == r))
            special_bad = ~both & ~same_special
            if bool((r_fin & ~c_fin).any()):
                self.bad_nonfinite = True
            if bool(special_bad.any()):
                self.special_any = True
            zero = torch.zeros((), dtype=torch.float64, device=c.device)
            signed = torch.where(both, c - r, zero)
            abs_r = torch.where(r_fin, r.abs(), zero)
            r = torch.where(r_fin, r, zero)
        err = signed.abs()
        ratio = err / (abs_r * self.tol.rtol + self.tol.atol)
        if not finite:
            ratio.masked_fill_(special_bad, math.inf)
        flat = int(ratio.argmax())
        value = float(ratio[flat])
        if value > self.worst_ratio:
            self.worst_ratio, self.worst_flat = value, offset + flat
            self.worst_cand, self.worst_ref = float(c[flat]), float(r[flat])
        self.max_rel = max(self.max_rel, float((err / (abs_r + self.rel_floor)).max()))
        self.policy_err = max(self.policy_err, float((err / (abs_r + 1.0)).max()))
        self.max_abs = max(self.max_abs, float(err.max()))
        self.err_sq += float(torch.dot(err, err))
        self.ref_sq += float(torch.dot(abs_r, abs_r))
        self.ref_max = max(self.ref_max, float(abs_r.max()))
        self.err_sum += float(err.sum())
        self.signed_sum += float(signed.sum())
        self.scaling += float(torch.dot(signed, torch.sign(r)))
        scale = self.scale_hint if self.scale_hint is not None else self.ref_max
        self.widespread += int(torch.count_nonzero(err > 1e-5 * scale))

    def _digest(self, c: torch.Tensor, offset: int) -> None:
        clean = torch.nan_to_num(c, nan=7.0, posinf=11.0, neginf=-11.0)
        self.sums[0] += float(clean.sum())
        self.sums[1] += float(torch.dot(clean, clean))
        weights = (torch.arange(offset, offset + c.numel(), device=c.device, dtype=torch.int64) % 1021 + 1)
        self.sums[2] += float(torch.dot(clean, weights.to(torch.float64)))

    def result(self) -> OutputDiff:
        n = self.n
        if n == 0:
            return OutputDiff(0.0, 0.0, 0.0, 0.0, [], None, None, False, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ref_norm, err_norm = math.sqrt(self.ref_sq), math.sqrt(self.err_sq)
        bias = max(abs(self.signed_sum), abs(self.scaling)) / self.err_sum if self.err_sum > 0 else 0.0
        return OutputDiff(
            max_abs=math.inf if self.special_any else self.max_abs,
            max_rel=math.inf if self.special_any else self.max_rel,
            rel_l2=_rel_l2(err_norm, ref_norm),
            worst_ratio=self.worst_ratio,
            worst_index=unravel(self.worst_flat, self.shape),
            worst_cand=self.worst_cand,
            worst_ref=self.worst_ref,
            bad_nonfinite=self.bad_nonfinite,
            special_mismatch=self.special_any,
            ref_norm=ref_norm,
            zero_fraction=1.0 - self.nonzero_c / n,
            ref_zero_fraction=1.0 - self.nonzero_r / n,
            scale_rel=self.max_abs / self.ref_max if self.ref_max > 0 else math.inf,
            widespread_fraction=self.widespread / n,
            bias_ratio=bias,
            policy_err=self.policy_err,
            poison_count=self.poison_count,
            digest=(self.sums[0], self.sums[1], self.sums[2]),
            numel=n,
            ref_max=self.ref_max,
        )


def _rel_l2(err_norm: float, ref_norm: float) -> float:
    return err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)


def diff(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_floor: float, poison: Optional[int] = None,
         scale_hint: Optional[float] = None) -> OutputDiff:
    """The candidate's output against the reference, streamed in chunks."""
    acc = DiffAccumulator(tol, rel_floor, tuple(torch.view_as_real(cand).shape if cand.is_complex() else cand.shape),
                          scale_hint=scale_hint, poison=poison)
    c, r = flat_view(cand), flat_view(ref)
    for start, end in chunks(c.numel()):
        acc.add(c[start:end], r[start:end])
    return acc.result()


def passes(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_l2_limit: float) -> bool:
    return diff(cand, ref, tol, tol.atol).passes(rel_l2_limit)


def eager_error(eager: torch.Tensor, ref: torch.Tensor) -> float:
    """The smallest t with |eager - r| <= t + t |r| everywhere both are finite."""
    return diff(eager, ref, Tol(1.0, 1.0), 1.0).policy_err


def widened(base: Tol, eager_err: float, policy: str) -> Tol:
    if policy == "strict":
        return Tol(base.atol, base.rtol)
    return Tol(max(base.atol, EAGER_WIDEN_FACTOR * eager_err), max(base.rtol, EAGER_WIDEN_FACTOR * eager_err))


def against_eager(tol: Tol, eager_err: float) -> Tol:
    """The tolerance for a candidate compared with eager's fp32 output instead of the float64
    reference: |c - e| <= |c - r| + |e - r|, so eager's own error is added to both terms (twice,
    for the |e| in place of |r|)."""
    return Tol(tol.atol + 2 * eager_err, tol.rtol + 2 * eager_err)


def poison_share(a: OutputDiff, b: OutputDiff) -> float:
    """Share of elements that carried the poison in both calls: never written. A legitimate NaN
    (the NaN pattern in the first call) or a wrong value does not count, since it is not the
    sentinel in the second call too."""
    n = max(a.numel, b.numel)
    return min(a.poison_count, b.poison_count) / n if n else 0.0


def compare_outputs(outs: Sequence[torch.Tensor], refs: Sequence[torch.Tensor], tol: Tol, rel_floor: float,
                    poison: Optional[int] = None) -> List[OutputDiff]:
    return [diff(o, r, tol, rel_floor, poison) for o, r in zip(outs, refs)]
