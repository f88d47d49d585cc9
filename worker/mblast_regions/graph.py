"""A Model captured as a graph of ops, with each op's output shape and the ops it reads."""

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence

import torch
from torch.fx import GraphModule, Node, Tracer
from torch.fx.passes.shape_prop import ShapeProp

from mblast_worker.tensors import dtype_name

from .cut import OP_KINDS, nodes_in, reads


@dataclass
class OpNode:
    name: str  # the graph's name for it, unique
    kind: str  # "module", "function" or "method"
    target: str  # the submodule's path, or the function's or method's name
    op_type: str  # the submodule's class (Conv2d) or the function's name (relu)
    reads: List[str]  # the ops and graph inputs it reads, in argument order
    shape: Optional[List[int]] = None  # of its output, where that is one tensor
    dtype: Optional[str] = None
    owner: str = ""  # the submodule whose own forward calls it ("layer1.0"; "" the model's)


@dataclass
class RegionGraph:
    inputs: List[str]
    ops: List[OpNode]
    outputs: List[str]  # the ops and inputs the model returns

    def to_json(self) -> Dict[str, Any]:
        return {"inputs": self.inputs, "ops": [asdict(op) for op in self.ops], "outputs": self.outputs}

    def op(self, name: str) -> OpNode:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(name)


@dataclass
class Capture:
    module: Optional[GraphModule]
    graph: Optional[RegionGraph]
    failure: Optional[str] = None  # why the model could not be captured: the run keeps it whole


class _OwnerTracer(Tracer):
    """symbolic_trace's tracer that also notes on every node the path of the module whose own
    forward made it (what later PyTorch keeps as nn_module_stack; 1.13 does not). A container
    (nn.Sequential) runs no code of its own: its ops belong to the module that called it."""

    def __init__(self) -> None:
        super().__init__()
        self._paths = [""]

    def call_module(self, m: torch.nn.Module, forward: Any, args: Any, kwargs: Any) -> Any:
        path = self.path_of_module(m)
        if self.is_leaf_module(m, path) or isinstance(m, torch.nn.Sequential):
            return super().call_module(m, forward, args, kwargs)
        self._paths.append(path)
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._paths.pop()

    def create_node(self, *args: Any, **kwargs: Any) -> Node:
        node = super().create_node(*args, **kwargs)
        node.meta["mblast_owner"] = self._paths[-1]
        return node


def _trace(model: torch.nn.Module) -> GraphModule:
    tracer = _OwnerTracer()
    graph = tracer.trace(model)
    return GraphModule(tracer.root, graph, type(model).__name__)


def capture(model: torch.nn.Module, example_inputs: Sequence[Any]) -> Capture:
    """Traces the model symbolically and propagates the example inputs for shapes. A model whose
    control flow depends on its values, or that calls what the tracer cannot follow, is no graph:
    the failure says why."""
    try:
        module = _trace(model)
    except Exception as exc:  # noqa: BLE001 - any tracing error means: keep the model whole
        return Capture(None, None, f"torch.fx could not trace the model: {type(exc).__name__}: {exc}")
    try:
        with torch.no_grad():
            ShapeProp(module).propagate(*example_inputs)
    except Exception as exc:  # noqa: BLE001
        return Capture(None, None, f"the traced graph did not run on the inputs: {type(exc).__name__}: {exc}")
    return Capture(module, describe(module))


def describe(module: GraphModule) -> RegionGraph:
    inputs: List[str] = []
    ops: List[OpNode] = []
    outputs: List[str] = []
    for node in module.graph.nodes:
        if node.op == "placeholder":
            inputs.append(node.name)
        elif node.op in OP_KINDS:
            ops.append(_op_node(module, node))
        elif node.op == "output":
            outputs = [n.name for n in nodes_in(node.args)]
    return RegionGraph(inputs, ops, outputs)


def _op_node(module: GraphModule, node: Node) -> OpNode:
    if node.op == "call_module":
        target = str(node.target)
        op_type = type(module.get_submodule(target)).__name__
    elif node.op == "call_method":
        target = op_type = str(node.target)
    else:
        target = getattr(node.target, "__qualname__", None) or getattr(node.target, "__name__", str(node.target))
        op_type = getattr(node.target, "__name__", target)
    meta = node.meta.get("tensor_meta")
    shape = list(meta.shape) if meta is not None and hasattr(meta, "shape") else None
    dtype = dtype_name(meta.dtype) if meta is not None and hasattr(meta, "dtype") else None
    owner = str(node.meta.get("mblast_owner", ""))
    return OpNode(node.name, OP_KINDS[node.op], target, op_type, reads(node), shape, dtype, owner)
