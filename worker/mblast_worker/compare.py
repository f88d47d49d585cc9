"""Error metrics against the float64 reference, and the tolerance policy (docs/ARCHITECTURE.md §3).

Comparisons stream: an output is compared chunk by chunk (chunk_elements at a time), so that no
float64 copy of a whole output, nor any full-size temporary, is ever made. KernelBench outputs
reach 2e9 elements; a whole-tensor comparison in float64 would need several times the memory
the problem itself uses.

max_rel_err is |c - r| / (|r| + atol): relative where values are large, absolute-scaled
near zero, so it stays finite on outputs with exact zeros.
"""

import math
import struct
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import torch

from .tensors import PositionWeights, chunks, finite_stand_ins, unravel

# An output with relative L2 error above this fails even if every element is inside
# atol: that is what catches "all zeros" on problems whose values are below atol.
REL_L2_LIMIT: float = 1e-2
EAGER_WIDEN_FACTOR: float = 1.5
PRECISION_DROP_RANGE = (1e-4, 5e-2)


@dataclass
class Tol:
    atol: float
    rtol: float
    # SOL-ExecBench's workload tolerance (its docs/workload.md): the share of elements that must be
    # within atol + rtol |ref|, and a cap on any element's absolute error. The defaults are
    # KernelBench's rule: every element within, no cap.
    matched_ratio: float = 1.0
    error_cap: Optional[float] = None
    # How eager's own error widens it: "max" raises atol and rtol to 1.5 x eager's error
    # (KernelBench's problems); "add" adds eager's error to them, for a tolerance stated against the
    # reference's own output (a SOL-ExecBench workload's): a candidate within it of eager's output
    # is within the sum of the float64 result.
    widen: str = "max"


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
    over_count: int = 0  # elements outside atol + rtol |ref| (non-finite disagreements included)
    allowed_over: int = 0  # how many may be: (1 - matched_ratio) of the elements
    error_cap: Optional[float] = None

    def looks_like_reduced_precision(self) -> bool:
        return (not self.special_mismatch and PRECISION_DROP_RANGE[0] <= self.scale_rel <= PRECISION_DROP_RANGE[1]
                and self.widespread_fraction >= 0.1 and self.bias_ratio < 0.5)

    def passes(self, rel_l2_limit: float) -> bool:
        return self.failure(rel_l2_limit) is None

    def failure(self, rel_l2_limit: float) -> Optional[str]:
        """Why the output fails, or None. NaN or Inf where the reference is finite always fails,
        whatever share of elements may be outside the tolerance."""
        if self.bad_nonfinite:
            return "nan_inf"
        if (self.special_mismatch or self.worst_ratio > 1.0) and self.over_count > self.allowed_over:
            return "elements"
        if self.error_cap is not None and self.max_abs > self.error_cap:
            return "error_cap"
        if self.ref_norm != 0.0 and self.rel_l2 > rel_l2_limit:
            return "rel_l2"
        return None


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


def count_true(mask: torch.Tensor) -> torch.Tensor:
    """The True elements of a bool tensor (a 0-d int64 tensor on its device). A sum of a bool
    tensor to int64 first copies it as int64, 8 bytes an element (a float64 chunk's worth for a
    chunk's mask; torch.count_nonzero does so on CUDA): rows of 255 elements summed as uint8 (at
    most 255 each) need no copy, and their sums are 255 times fewer."""
    flat = mask.reshape(-1).view(torch.uint8)
    whole = flat.numel() - flat.numel() % 255
    return flat[:whole].view(-1, 255).sum(dim=1, dtype=torch.uint8).sum() + flat[whole:].sum()


def count_poison(chunk: torch.Tensor, word: int) -> torch.Tensor:
    """Elements of a flat chunk whose bits are what poisoning with the float32 word left there (a
    0-d tensor on the chunk's device: read it when needed)."""
    if chunk.dtype == torch.bool:
        chunk = chunk.view(torch.uint8)
    width = chunk.element_size()
    none = torch.zeros((), dtype=torch.int64, device=chunk.device)
    if width not in _INT_VIEW:
        return none
    bits = chunk.view(_INT_VIEW[width])
    hits: Optional[torch.Tensor] = None
    for pattern in _poison_patterns(word, width):
        eq = bits == _signed(pattern, width)
        hits = eq if hits is None else hits.bitwise_or_(eq)
    return count_true(hits) if hits is not None else none


# Running statistics of DiffAccumulator, as positions in its two float64 vectors on the chunks'
# device: sums add up chunk by chunk, maxima take the larger; nothing is read back before result().
_SUMS = ("err_sq", "ref_sq", "err_sum", "signed_sum", "scaling", "nonzero_c", "nonzero_r", "widespread",
         "digest0", "digest1", "digest2", "poison", "bad_nonfinite", "special", "over")
_MAXES = ("max_rel", "policy_err", "max_abs", "ref_max")
_S = {name: i for i, name in enumerate(_SUMS)}
_M = {name: i for i, name in enumerate(_MAXES)}


@dataclass
class _Chunk:
    """One chunk's float64 values as the statistics read them: NaN and infinities set aside."""

    c: torch.Tensor  # the candidate's values (may be the caller's tensor: never written to)
    r: torch.Tensor  # the reference's, non-finite ones as 0 (may be the caller's: never written to)
    signed: torch.Tensor  # c - r where both are finite, else 0 (this chunk's own buffer)
    signed_sum: torch.Tensor
    clean: torch.Tensor  # c with finite stand-ins (tensors.finite_stand_ins)
    nonzero_r: torch.Tensor  # the reference's non-zero elements, NaN and infinities included
    nonfinite_counts: List[torch.Tensor]  # NaN/Inf where the reference is finite; disagreements
    special_bad: Optional[torch.Tensor] = None  # where a non-finite value disagrees, if any may


def _as_chunk(cand: torch.Tensor, ref: torch.Tensor, zero: torch.Tensor, count_ref_nonzero: bool) -> _Chunk:
    """count_ref_nonzero: whether nonzero_r is wanted (a pass over the chunk), else it is zero."""
    c = cand.to(torch.float64)
    r = ref.to(device=c.device, dtype=torch.float64)
    signed = c - r
    signed_sum = signed.sum()
    # A finite sum means every difference is finite, so both sides are finite everywhere (a NaN or
    # an infinity on either side makes its difference, and the sum, non-finite): the chunk needs
    # none of the masks below. Overflowing finite values take the masked path, correctly.
    nonzero_r = count_true(r != 0) if count_ref_nonzero else zero
    if math.isfinite(float(signed_sum)):
        return _Chunk(c, r, signed, signed_sum, c, nonzero_r, [zero, zero])
    c_fin, r_fin = torch.isfinite(c), torch.isfinite(r)
    both = c_fin & r_fin
    # Where either side is not finite, the two agree only as NaN and NaN or as the same infinity.
    special_bad = ~both & ~((c == r) | (torch.isnan(c) & torch.isnan(r)))
    signed = torch.where(both, signed, zero)
    return _Chunk(c, torch.where(r_fin, r, zero), signed, signed.sum(), finite_stand_ins(c), nonzero_r,
                  [count_true(r_fin & ~c_fin), count_true(special_bad)], special_bad)


@dataclass
class DiffAccumulator:
    """diff() over one output, fed in order by chunks of its flattened values. Every statistic
    stays on the chunks' device until result(); a chunk waits for the device once, to learn
    whether it holds NaN or infinities (most do not, and skip the masks that handle them).

    A chunk's temporaries are at most four float64 buffers of its size beside the two inputs'
    float64 copies (where they are not float64 already) and the digest's weights: the judge's
    memory budget leaves little room beside outputs of billions of elements. verdict_only keeps
    what OutputDiff.failure() reads and skips the rest (digest, poison, the error's shape)."""

    tol: Tol
    rel_floor: float
    shape: Tuple[int, ...]
    scale_hint: Optional[float] = None  # max |ref| when known ahead (for widespread_fraction)
    poison: Optional[int] = None  # float32 word to count (poison_word), or None
    verdict_only: bool = False
    n: int = 0
    _sums: Optional[torch.Tensor] = None
    _maxes: Optional[torch.Tensor] = None
    _worst: Optional[torch.Tensor] = None  # ratio, flat index, candidate's value, reference's value
    _weights: PositionWeights = field(default_factory=PositionWeights)  # the digest's

    def add(self, cand: torch.Tensor, ref: torch.Tensor) -> None:
        """cand: a flat chunk of the candidate's output (any dtype); ref: the same elements of the
        reference (any floating dtype, any device)."""
        offset = self.n
        self.n += cand.numel()
        if cand.numel() == 0:
            return
        if self._sums is None:
            self._sums = torch.zeros(len(_SUMS), dtype=torch.float64, device=cand.device)
            self._maxes = torch.zeros(len(_MAXES), dtype=torch.float64, device=cand.device)
            self._worst = torch.tensor([-1.0, 0.0, 0.0, 0.0], dtype=torch.float64, device=cand.device)
        zero = torch.zeros((), dtype=torch.float64, device=cand.device)
        ch = _as_chunk(cand, ref, zero, count_ref_nonzero=not self.verdict_only)
        scaling = zero if self.verdict_only else torch.dot(ch.signed, torch.sign(ch.r))
        err = ch.signed.abs_()  # from here on the chunk's difference buffer holds |c - r|
        abs_r = ch.r.abs()
        ref_max = torch.maximum(self._maxes[_M["ref_max"]], abs_r.max())
        scratch = torch.mul(abs_r, self.tol.rtol).add_(self.tol.atol)
        ratio = torch.div(err, scratch, out=scratch)
        if ch.special_bad is not None:
            ratio.masked_fill_(ch.special_bad, math.inf)
        over = count_true(ratio > 1.0)
        value, flat = ratio.max(dim=0)
        here = torch.stack([value, (flat + offset).to(torch.float64), ch.c[flat], ch.r[flat]])
        self._worst = torch.where(value > self._worst[0], here, self._worst)
        if self.verdict_only:
            shape_sums, maxes = [zero] * 7, [zero, zero]
        else:
            shape_sums = self._shape_sums(cand, ch, err, ref_max, offset, zero)
            # The scratch buffer is free again once the worst element is read.
            maxes = [torch.div(err, torch.add(abs_r, self.rel_floor, out=scratch), out=scratch).max(),
                     torch.div(err, torch.add(abs_r, 1.0, out=scratch), out=scratch).max()]
        sums = [torch.dot(err, err), torch.dot(abs_r, abs_r), err.sum(), ch.signed_sum, scaling, *shape_sums,
                *ch.nonfinite_counts, over]
        self._sums += torch.stack([s.to(torch.float64) for s in sums])
        self._maxes = torch.maximum(self._maxes, torch.stack([*maxes, err.max(), ref_max]))

    def _shape_sums(self, cand: torch.Tensor, ch: _Chunk, err: torch.Tensor, ref_max: torch.Tensor, offset: int,
                    zero: torch.Tensor) -> List[torch.Tensor]:
        """nonzero_c, nonzero_r, widespread, the digest's three sums and the poison count."""
        scale = self.scale_hint if self.scale_hint is not None else ref_max
        weights = self._weights.at(offset, cand.numel(), cand.device)
        return [count_true(ch.c != 0), ch.nonzero_r, count_true(err > 1e-5 * scale),
                ch.clean.sum(), torch.dot(ch.clean, ch.clean), torch.dot(ch.clean, weights),
                count_poison(cand, self.poison) if self.poison is not None else zero]

    def result(self) -> OutputDiff:
        n = self.n
        if n == 0 or self._sums is None:
            return OutputDiff(0.0, 0.0, 0.0, 0.0, [], None, None, False, False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        s, m = self._sums.tolist(), self._maxes.tolist()
        worst_ratio, worst_flat, worst_cand, worst_ref = self._worst.tolist()
        special_any = s[_S["special"]] > 0
        ref_norm, err_norm = math.sqrt(s[_S["ref_sq"]]), math.sqrt(s[_S["err_sq"]])
        err_sum = s[_S["err_sum"]]
        bias = max(abs(s[_S["signed_sum"]]), abs(s[_S["scaling"]])) / err_sum if err_sum > 0 else 0.0
        max_abs, ref_max = m[_M["max_abs"]], m[_M["ref_max"]]
        found = worst_ratio >= 0
        return OutputDiff(
            max_abs=math.inf if special_any else max_abs,
            max_rel=math.inf if special_any else m[_M["max_rel"]],
            rel_l2=_rel_l2(err_norm, ref_norm),
            worst_ratio=worst_ratio,
            worst_index=unravel(int(worst_flat), self.shape),
            worst_cand=worst_cand if found else None,
            worst_ref=worst_ref if found else None,
            bad_nonfinite=s[_S["bad_nonfinite"]] > 0,
            special_mismatch=special_any,
            ref_norm=ref_norm,
            zero_fraction=1.0 - s[_S["nonzero_c"]] / n,
            ref_zero_fraction=1.0 - s[_S["nonzero_r"]] / n,
            scale_rel=max_abs / ref_max if ref_max > 0 else math.inf,
            widespread_fraction=s[_S["widespread"]] / n,
            bias_ratio=bias,
            policy_err=m[_M["policy_err"]],
            poison_count=int(s[_S["poison"]]),
            digest=(s[_S["digest0"]], s[_S["digest1"]], s[_S["digest2"]]),
            numel=n,
            ref_max=ref_max,
            over_count=int(s[_S["over"]]),
            allowed_over=int(math.floor((1.0 - self.tol.matched_ratio) * n + 1e-9)),
            error_cap=self.tol.error_cap,
        )


def _rel_l2(err_norm: float, ref_norm: float) -> float:
    return err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)


def diff(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_floor: float, poison: Optional[int] = None,
         scale_hint: Optional[float] = None, verdict_only: bool = False) -> OutputDiff:
    """The candidate's output against the reference, streamed in chunks (verdict_only: see
    DiffAccumulator)."""
    acc = DiffAccumulator(tol, rel_floor, tuple(torch.view_as_real(cand).shape if cand.is_complex() else cand.shape),
                          scale_hint=scale_hint, poison=poison, verdict_only=verdict_only)
    c, r = flat_view(cand), flat_view(ref)
    for start, end in chunks(c.numel()):
        acc.add(c[start:end], r[start:end])
    return acc.result()


def passes(cand: torch.Tensor, ref: torch.Tensor, tol: Tol, rel_l2_limit: float) -> bool:
    return diff(cand, ref, tol, tol.atol, verdict_only=True).passes(rel_l2_limit)


def eager_error(eager: torch.Tensor, ref: torch.Tensor) -> float:
    """The smallest t with |eager - r| <= t + t |r| everywhere both are finite."""
    return diff(eager, ref, Tol(1.0, 1.0), 1.0).policy_err


def widen_floor(eager_err: float) -> float:
    """The least atol and rtol of the eager-widened policy, for every backend: the native judges
    read it from the bundles' meta.json ("eager": {"widen_floor": ...}) instead of repeating it."""
    return EAGER_WIDEN_FACTOR * eager_err


def widened(base: Tol, eager_err: float, policy: str, eager_max_abs: float = 0.0) -> Tol:
    """Under eager-widened, never stricter than eager's own error: atol and rtol at least 1.5 x
    eager's policy error and an error cap at least 1.5 x eager's largest absolute error (widen
    "max"), or eager's errors added to them (widen "add", see Tol)."""
    if policy == "strict":
        return Tol(base.atol, base.rtol, base.matched_ratio, base.error_cap, base.widen)
    if base.widen == "add":
        # |c - r| <= |c - e| + |e - r| <= atol + rtol |e| + t (1 + |r|), and |e| <= |r| + t (1 + |r|).
        extra = eager_err * (1.0 + base.rtol)
        cap = None if base.error_cap is None else base.error_cap + eager_max_abs
        return Tol(base.atol + extra, base.rtol + extra, base.matched_ratio, cap, base.widen)
    floor = widen_floor(eager_err)
    cap = None if base.error_cap is None else max(base.error_cap, EAGER_WIDEN_FACTOR * eager_max_abs)
    return Tol(max(base.atol, floor), max(base.rtol, floor), base.matched_ratio, cap, base.widen)


def against_eager(tol: Tol, eager_err: float) -> Tol:
    """The tolerance for a candidate compared with eager's fp32 output instead of the float64
    reference: |c - e| <= |c - r| + |e - r|, so eager's own error is added to both terms (twice,
    for the |e| in place of |r|)."""
    return Tol(tol.atol + 2 * eager_err, tol.rtol + 2 * eager_err, tol.matched_ratio)


def poison_share(a: OutputDiff, b: OutputDiff) -> float:
    """Share of elements that carried the poison in both calls: never written. A legitimate NaN
    (the NaN pattern in the first call) or a wrong value does not count, since it is not the
    sentinel in the second call too."""
    n = max(a.numel, b.numel)
    return min(a.poison_count, b.poison_count) / n if n else 0.0


def compare_outputs(outs: Sequence[torch.Tensor], refs: Sequence[torch.Tensor], tol: Tol, rel_floor: float,
                    poison: Optional[int] = None) -> List[OutputDiff]:
    return [diff(o, r, tol, rel_floor, poison) for o, r in zip(outs, refs)]
