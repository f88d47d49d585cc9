"""Small tensor helpers shared by verification, timing and the cost model."""

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import torch

Span = Tuple[int, int]

# Streaming over a tensor (comparison, digest, equality) goes chunk by chunk, so that no float64
# copy or full-size temporary of it is made. Large tensors take larger chunks: a chunk costs a few
# dozen kernel launches and one wait whatever its size, and level1/19's 1.6e9-element output
# compared in 4 Mi chunks spent seconds on them (H100). The largest chunk is bounded by memory: a
# comparison holds up to six float64 buffers of a chunk (compare.DiffAccumulator), 384 MiB at 8 Mi
# elements, where the judge's budget leaves 1 GiB beside its largest holdings (four outputs'
# worth in the staleness checks; 16 Mi chunks and the comparison's earlier nine buffers put
# level1/19 0.16 GiB over it, acceptance call 98 on an H100).
CHUNK_ELEMENTS: int = 1 << 22  # 4 Mi elements: 32 MiB per float64 temporary
MAX_CHUNK_ELEMENTS: int = 1 << 23
CHUNKS_PER_TENSOR: int = 64
WEIGHT_PERIOD: int = 1021  # of digests' position weights: (i % 1021) + 1


def chunk_elements(numel: int) -> int:
    """The chunk size for streaming over numel elements: a function of numel alone, so that two
    passes over tensors of the same size sum in the same order (equal digests)."""
    size = CHUNK_ELEMENTS
    while 2 * size <= MAX_CHUNK_ELEMENTS and 2 * size * CHUNKS_PER_TENSOR <= numel:
        size *= 2
    return size


def chunks(n: int, size: Optional[int] = None) -> Iterator[Span]:
    step = size if size is not None else chunk_elements(n)
    for start in range(0, n, step):
        yield start, min(n, start + step)


class PositionWeights:
    """The weights of a position-weighted sum, (i % WEIGHT_PERIOD) + 1, as float64: the weights of
    any span are a slice of one vector, built for the largest span asked for, since they depend on
    the offset only modulo the period."""

    def __init__(self) -> None:
        self._base: Optional[torch.Tensor] = None

    def at(self, offset: int, n: int, device: torch.device) -> torch.Tensor:
        if self._base is None or self._base.numel() < n + WEIGHT_PERIOD:
            self._base = None  # one buffer at a time: the old one goes before the new one is made
            # Exact in float64 (integers below 2**53), and built in place: one buffer, no temporaries.
            base = torch.arange(n + WEIGHT_PERIOD, device=device, dtype=torch.float64)
            self._base = base.fmod_(WEIGHT_PERIOD).add_(1)
        start = offset % WEIGHT_PERIOD
        return self._base[start:start + n]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def map_tensors(values: List[Any], fn: Any) -> List[Any]:
    """Apply fn to every tensor in a (possibly nested) list of inputs."""
    out: List[Any] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(fn(v))
        elif isinstance(v, (list, tuple)):
            out.append(type(v)(map_tensors(list(v), fn)))
        else:
            out.append(v)
    return out


def flat_tensors(values: Iterable[Any]) -> List[torch.Tensor]:
    found: List[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(flat_tensors(v))
    return found


def detached(value: Any) -> Any:
    """value with every tensor in it (nested in tuples and lists) detached from autograd: a
    recorded forward's output kept this way does not keep its graph's saved tensors alive."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if type(value) in (list, tuple):
        return type(value)(detached(v) for v in value)
    return value


def drop_state_history(model: torch.nn.Module) -> int:
    """Tensors the modules keep between calls (attributes, buffers) that carry autograd history,
    detached in place of the originals, values unchanged. A model that keeps its last result as
    state (an RNN's hidden tensor) otherwise chains each recorded call's graph to the next, and
    the memory its saved tensors hold grows with every timed call. Returns how many."""
    count = 0
    for module in model.modules():
        for store in (module.__dict__, module._buffers):
            for name, value in list(store.items()):
                if (isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter)
                        and value.grad_fn is not None):
                    store[name] = value.detach()
                    count += 1
    return count


def to_device(values: List[Any], device: torch.device) -> List[Any]:
    return map_tensors(values, lambda t: t.to(device))


def clone_all(values: List[Any]) -> List[Any]:
    return map_tensors(values, lambda t: t.detach().clone())


def upcast(values: List[Any], dtype: torch.dtype) -> List[Any]:
    return map_tensors(values, lambda t: t.to(dtype) if t.is_floating_point() else t)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equality where NaN equals NaN; shapes and strides must agree too. Compared in chunks,
    accumulated on the device (one wait), so that no full-size mask is made: torch.equal makes
    one on CUDA, 4 GiB for a 4-Gi-element input."""
    if a.shape != b.shape or a.dtype != b.dtype or a.stride() != b.stride():
        return False
    if a.numel() == 0:
        return True
    x, y = a.reshape(-1), b.reshape(-1)
    floating = a.is_floating_point() or a.is_complex()
    same = torch.ones((), dtype=torch.bool, device=a.device)
    for start, end in chunks(x.numel()):
        p, q = x[start:end], y[start:end]
        equal = p == q
        if floating:
            equal |= torch.isnan(p) & torch.isnan(q)
        same &= equal.all()
    return bool(same)


def storage_span(t: torch.Tensor) -> Optional[Span]:
    """[start, end) of the memory the tensor's storage covers; None when empty or storage-less."""
    if t.numel() == 0:
        return None
    try:
        if hasattr(t, "untyped_storage"):
            storage = t.untyped_storage()
            ptr, nbytes = storage.data_ptr(), storage.nbytes()
        else:
            storage = t.storage()
            ptr, nbytes = storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        return None
    if ptr == 0 or nbytes == 0:
        return None
    return (ptr, ptr + nbytes)


def spans_overlap(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def is_dense(t: torch.Tensor) -> bool:
    """Strided layout, no two elements at one address (so no expand()-style lazy views)."""
    if t.layout != torch.strided:
        return False
    if t.numel() <= 1:
        return True
    dims = sorted(((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1), key=lambda d: d[0])
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def copy_values_into(buffers: List[Any], values: List[Any]) -> bool:
    """Writes the tensors of `values` into those of `buffers` in place (same pointers, new
    contents); False, and nothing written, where their tensors differ in number, shape or dtype."""
    dst, src = flat_tensors(buffers), flat_tensors(values)
    if len(dst) != len(src) or any(d.shape != v.shape or d.dtype != v.dtype for d, v in zip(dst, src)):
        return False
    with torch.no_grad():
        for d, v in zip(dst, src):
            d.copy_(v)
    return True


def finite_stand_ins(d: torch.Tensor) -> torch.Tensor:
    """NaN and the infinities as fixed finite values, so that sums over a digest's values stay
    finite and still move when one of them appears (the comparison's digest of an output uses the
    same values, so it equals the digest of that output)."""
    return torch.nan_to_num(d, nan=7.0, posinf=11.0, neginf=-11.0)


def digest(values: Iterable[Any]) -> List[List[float]]:
    """Per tensor: sum, sum of squares and a position-weighted sum of its values, in float64 and in
    chunks (no full-size copy). Tells inputs apart, and shows an input changed in place, without
    keeping a copy of it; the weighted sum also changes when values only move."""
    parts: List[List[float]] = []
    for t in flat_tensors(values):
        flat = t.detach()
        if flat.is_complex():
            flat = torch.view_as_real(flat)
        flat = flat.reshape(-1)
        sums = torch.zeros(3, dtype=torch.float64, device=flat.device)  # read back once per tensor
        weights = PositionWeights()
        for start, end in chunks(flat.numel()):
            d = flat[start:end].to(torch.float64)
            d = finite_stand_ins(d)
            sums += torch.stack([d.sum(), torch.dot(d, d), torch.dot(d, weights.at(start, d.numel(), d.device))])
        parts.append([float(flat.numel())] + sums.tolist())
    return parts


def unravel(flat_index: int, shape: Tuple[int, ...]) -> List[int]:
    index: List[int] = []
    for size in reversed(shape):
        index.append(flat_index % size if size else 0)
        flat_index = flat_index // size if size else 0
    return list(reversed(index))


def state_snapshot(model: torch.nn.Module) -> Dict[str, List[List[float]]]:
    """A digest of every parameter and buffer (no copy of them: a model's state can be as large as
    eager's whole footprint)."""
    return {k: digest([v]) for k, v in model.state_dict(keep_vars=True).items() if isinstance(v, torch.Tensor)}


def changed_state(model: torch.nn.Module, snapshot: Dict[str, List[List[float]]]) -> List[str]:
    current = {k: v for k, v in model.state_dict(keep_vars=True).items() if isinstance(v, torch.Tensor)}
    return [k for k, d in snapshot.items() if k not in current or digest([current[k].detach()]) != d]
