"""What identifies a region window beyond one model (the model-level knowledge base, issue 24):

- kinds: its ops' kinds in order, "conv2d>batchnorm2d>relu";
- shape_class: the dtype it reads and the bytes it reads and writes, in powers of 16
  ("float32:2^20B" for 1 to 16 MiB): regions of one kind and size class share reward statistics;
- signature: "kinds|shape_class", the key of those statistics;
- key: a hash of every op's exact configuration (module settings, constant arguments, which value
  it reads) and every shape: equal only where the same computation appears again, as the blocks of
  one ResNet stage do, so that a region's verified implementation is retried there first;
- computation: the same hash with the shapes of the values left out (their dtypes and ranks kept):
  equal where the same computation runs at other sizes (another batch, another image size), so
  that what held at one size is retried first at another;
- input_shapes: "float32[10,64,56,56]" per window input, for the agents.
"""

import hashlib
import math
from typing import Any, Dict, List, Optional

import torch
from torch.fx import GraphModule, Node

from mblast_worker.tensors import dtype_name

from .cut import OP_KINDS, Window, attribute

BUCKET_BITS = 4  # a shape class spans a factor of 2^4 in bytes


def region_identity(module: GraphModule, window: Window) -> Dict[str, Any]:
    """The window's kinds, shape class, signature, key and input shapes (the module's nodes carry
    ShapeProp's tensor_meta)."""
    nodes = {node.name: node for node in module.graph.nodes}
    ops = [nodes[name] for name in window.ops]
    inputs = [nodes[name] for name in window.inputs]
    kinds = ">".join(_kind(module, node) for node in ops)
    read = [_metas(node) for node in inputs]
    written = [_metas(nodes[name]) for name in window.outputs]
    shape_class = _shape_class([m for ms in read for m in ms], [m for ms in written for m in ms])
    return {
        "kinds": kinds,
        "shape_class": shape_class,
        "signature": f"{kinds}|{shape_class}",
        "key": _hash(module, ops, inputs, window, shapes=True),
        "computation": _hash(module, ops, inputs, window, shapes=False),
        "input_shapes": [_value_text(node) for node in inputs],
    }


def _hash(module: GraphModule, ops: List[Node], inputs: List[Node], window: Window, shapes: bool) -> str:
    canonical = "\n".join(_op_text(module, node, window, shapes) for node in ops)
    canonical += "\nin " + ";".join(_value_text(node, shapes) for node in inputs)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _kind(module: GraphModule, node: Node) -> str:
    if node.op == "call_module":
        return type(module.get_submodule(str(node.target))).__name__.lower()
    return str(getattr(node.target, "__name__", node.target)).lower()


def _metas(node: Node) -> List[Any]:
    meta = node.meta.get("tensor_meta")
    if meta is None:
        return []
    if hasattr(meta, "shape"):  # one tensor's TensorMetadata (itself a named tuple)
        return [meta]
    if isinstance(meta, (tuple, list)):
        return [m for m in meta if hasattr(m, "shape")]
    return []


def _value_text(node: Node, shapes: bool = True) -> str:
    """"float32[10,64,56,56]"; without shapes, its rank only: "float32[4d]"."""
    metas = _metas(node)
    if not metas:
        return "value"
    return ",".join(_tensor_text(m.dtype, m.shape, shapes) for m in metas)


def _tensor_text(dtype: torch.dtype, shape: Any, shapes: bool) -> str:
    dims = ",".join(str(d) for d in shape) if shapes else f"{len(shape)}d"
    return f"{dtype_name(dtype)}[{dims}]"


def _nbytes(meta: Any) -> int:
    return math.prod(meta.shape) * torch.empty((), dtype=meta.dtype).element_size()


def _shape_class(read: List[Any], written: List[Any]) -> str:
    total = sum(_nbytes(m) for m in read + written)
    dtype = dtype_name(read[0].dtype) if read else "none"
    if total <= 0:
        return f"{dtype}:0B"
    bucket = BUCKET_BITS * math.floor(math.log2(total) / BUCKET_BITS)
    return f"{dtype}:2^{bucket}B"


def _op_text(module: GraphModule, node: Node, window: Window, shapes: bool) -> str:
    """One op as the key sees it: its kind and settings, what it reads (an earlier op of the window
    by position, a window input by position, a parameter by shape, a constant by value) and its
    output's shape (with `shapes`; else dtypes and ranks)."""
    if node.op == "call_module":
        sub = module.get_submodule(str(node.target))
        head = f"{type(sub).__name__}({sub.extra_repr()})"
    else:
        head = f"{OP_KINDS[node.op]}:{getattr(node.target, '__qualname__', node.target)}"
    args = torch.fx.node.map_aggregate(node.args, lambda a: _arg_text(module, a, window, shapes))
    kwargs = torch.fx.node.map_aggregate(dict(node.kwargs), lambda a: _arg_text(module, a, window, shapes))
    return f"{head} {args} {kwargs} -> {_value_text(node, shapes)}"


def _arg_text(module: GraphModule, arg: Any, window: Window, shapes: bool) -> Optional[str]:
    if not isinstance(arg, Node):
        return repr(arg)
    if arg.name in window.ops:
        return f"op{window.ops.index(arg.name)}"
    if arg.name in window.inputs:
        return f"in{window.inputs.index(arg.name)}"
    if arg.op == "get_attr":
        value = attribute(module, str(arg.target))
        if isinstance(value, torch.Tensor):
            return f"param {_tensor_text(value.dtype, value.shape, shapes)}"
        return f"attr {value!r}"
    return "value"

