"""A window as a module of its own (the region an agent rewrites), and the model with one window
replaced by another module while the rest stays as it was."""

import operator
from typing import Any, Callable, Dict, Tuple

import torch
from torch.fx import Graph, GraphModule, Node

from .windows import Window


def region_module(module: GraphModule, window: Window) -> GraphModule:
    """The window's ops as a module: its inputs are the window's, in order; it returns its one
    output, or a tuple of them. Parameters and submodules are shared with `module`."""
    nodes = _by_name(module)
    graph = Graph()
    env: Dict[Node, Node] = {nodes[name]: graph.placeholder(name) for name in window.inputs}
    copy = _copier(graph, env)
    for name in window.ops:
        env[nodes[name]] = graph.node_copy(nodes[name], copy)
    results = [env[nodes[name]] for name in window.outputs]
    graph.output(results[0] if len(results) == 1 else tuple(results))
    return GraphModule(module, graph, class_name="Region")


def replace_region(module: GraphModule, window: Window, replacement: torch.nn.Module) -> GraphModule:
    """`module` with the window's ops replaced by one call of `replacement` on the window's inputs;
    it must return what region_module(module, window) returns."""
    nodes = _by_name(module)
    inside = set(window.ops)
    slot = "mblast_region_" + window.ops[0]
    graph = Graph()
    env: Dict[Node, Node] = {}
    copy = _copier(graph, env)
    for node in module.graph.nodes:
        if node.name == window.ops[0]:
            call = graph.call_module(slot, tuple(env[nodes[name]] for name in window.inputs))
            if len(window.outputs) == 1:
                env[nodes[window.outputs[0]]] = call
            else:
                for i, name in enumerate(window.outputs):
                    env[nodes[name]] = graph.call_function(operator.getitem, (call, i))
        elif node.name not in inside:
            env[node] = graph.node_copy(node, copy)
    # What the new graph names, taken from `module` (which is left as it was) and the replacement.
    owners: Dict[str, Any] = {slot: replacement}
    for node in graph.nodes:
        if node.op == "call_module" and node.target != slot:
            owners[str(node.target)] = module.get_submodule(str(node.target))
        elif node.op == "get_attr":
            owners[str(node.target)] = _attribute(module, str(node.target))
    return GraphModule(owners, graph, class_name=type(module).__name__)


def _attribute(module: torch.nn.Module, path: str) -> Any:
    value: Any = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _by_name(module: GraphModule) -> Dict[str, Node]:
    return {node.name: node for node in module.graph.nodes}


def _copier(graph: Graph, env: Dict[Node, Node]) -> Callable[[Node], Node]:
    def copy(node: Node) -> Node:
        if node not in env:
            if node.op != "get_attr":
                raise ValueError(f"{node.name} is read inside the window but is none of its inputs")
            env[node] = graph.node_copy(node, copy)  # a parameter or buffer read by a function
        return env[node]

    return copy


def outputs_of(module: torch.nn.Module, inputs: Any) -> Tuple[Any, ...]:
    """The module's outputs on the inputs, as a tuple, without autograd."""
    with torch.no_grad():
        out = module(*inputs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def same_values(xs: Tuple[Any, ...], ys: Tuple[Any, ...]) -> bool:
    """Exactly equal (a region cut out and put back computes the same ops in the same order)."""
    return len(xs) == len(ys) and all(torch.equal(p, q) for p, q in zip(xs, ys))


def same_outputs(a: torch.nn.Module, b: torch.nn.Module, inputs: Any) -> bool:
    """Whether two modules give exactly the same values on the inputs."""
    return same_values(outputs_of(a, inputs), outputs_of(b, inputs))
