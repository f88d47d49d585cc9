"""Cutting a window of consecutive ops out of a torch.fx graph: its boundary, the window as a module
of its own, the graph with the window replaced by one call of another module, and a model traced
with one region wrapped; and sibling linear or convolution modules (reading the same input) merged
into one wider call. Only the standard library and torch: the built-in region candidates (mblast_builtin
--region) and sibling_merge candidates embed this file's source and exec it, so it imports nothing of mblast."""

import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

import torch
from torch.fx import Graph, GraphModule, Node, Tracer

OP_KINDS = {"call_module": "module", "call_function": "function", "call_method": "method"}


@dataclass
class Window:
    ops: List[str]  # consecutive in the graph's order
    share: float  # of the measured time
    inputs: List[str]  # values it reads from outside (graph inputs, earlier ops)
    outputs: List[str]  # its values read after it, or returned by the model

    def to_json(self) -> Dict[str, object]:
        return {"ops": self.ops, "share": self.share, "inputs": self.inputs, "outputs": self.outputs}


def nodes_in(args: Any) -> List[Node]:
    found: List[Node] = []
    torch.fx.node.map_arg(args, lambda n: found.append(n) or n)
    return found


def reads(node: Node) -> List[str]:
    """The ops and graph inputs the node reads, in argument order, each once (a parameter or buffer
    it reads is no op)."""
    return list(dict.fromkeys(n.name for n in nodes_in((node.args, node.kwargs)) if n.op != "get_attr"))


def make_window(ops: Sequence[str], order: Sequence[Tuple[str, Sequence[str]]], returned: Sequence[str],
                share: float = 0.0) -> Window:
    """The window of `ops` in a graph given as its ops in order, each with what it reads, and the names
    it returns. The ops must be consecutive and connected (each joined to the first through values
    one reads from another, in either direction: a block's shortcut branch is part of the block)."""
    if not ops:
        raise ValueError("a window needs at least one op")
    position = {name: i for i, (name, _) in enumerate(order)}
    missing = [name for name in ops if name not in position]
    if missing:
        known = ", ".join(list(position)[:40]) + (", ..." if len(position) > 40 else "")
        raise ValueError(f"no op named {', '.join(missing)} in the traced graph; its ops: {known}")
    first = position[ops[0]]
    if [position[name] for name in ops] != list(range(first, first + len(ops))):
        raise ValueError(f"the ops {', '.join(ops)} are not consecutive in the traced graph (its ops from {ops[0]}: "
                         + ", ".join(name for name, _ in order[first:first + len(ops) + 1]) + ")")
    inside = set(ops)
    apart = disconnected_ops(ops, {name: names for name, names in order[first:first + len(ops)]})
    if apart:
        raise ValueError(f"the ops {', '.join(ops)} are not connected: {', '.join(apart)} neither read "
                         f"nor are read by {ops[0]} and the ops joined to it")
    inputs: List[str] = []
    for _, names in order[first:first + len(ops)]:
        for read in names:
            if read not in inside and read not in inputs:
                inputs.append(read)
    read_later = {read for _, names in order[first + len(ops):] for read in names} | set(returned)
    return Window(list(ops), share, inputs, [name for name in ops if name in read_later])


def disconnected_ops(ops: Sequence[str], reads_of: Dict[str, Sequence[str]]) -> List[str]:
    """The ops not joined to the first through reads inside the window, in order."""
    neighbours: Dict[str, set] = {name: set() for name in ops}
    for name in ops:
        for read in reads_of.get(name, ()):
            if read in neighbours:
                neighbours[name].add(read)
                neighbours[read].add(name)
    joined, frontier = {ops[0]}, [ops[0]]
    while frontier:
        for other in neighbours[frontier.pop()] - joined:
            joined.add(other)
            frontier.append(other)
    return [name for name in ops if name not in joined]


def window_of(module: GraphModule, ops: Sequence[str]) -> Window:
    """The window of `ops` in the module's graph (make_window's rules and errors)."""
    order = [(node.name, reads(node)) for node in module.graph.nodes if node.op in OP_KINDS]
    returned = [n.name for node in module.graph.nodes if node.op == "output" for n in nodes_in(node.args)]
    return make_window(ops, order, returned)


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
            owners[str(node.target)] = attribute(module, str(node.target))
    return GraphModule(owners, graph, class_name=type(module).__name__)


class _BaseForwardTracer(Tracer):
    """Traces a module through the given forward function instead of its class's own forward (that of
    a subclass which overrides it), the module itself being `self`."""

    def __init__(self, forward: Callable[..., Any]) -> None:
        super().__init__()
        self.base_forward = forward

    def create_args_for_root(self, root_fn: Any, *args: Any, **kwargs: Any) -> Any:
        return super().create_args_for_root(self.base_forward, *args, **kwargs)


def trace_base(model: torch.nn.Module, base_forward: Callable[..., Any]) -> GraphModule:
    """`model` traced through `base_forward` (its base class's forward, bound to it or not). Parameters,
    buffers and submodules stay `model`'s own: nothing is copied, nothing is registered on it."""
    tracer = _BaseForwardTracer(getattr(base_forward, "__func__", base_forward))
    try:
        graph = tracer.trace(model)
    except Exception as exc:  # noqa: BLE001 - whatever the tracer met, said with the model's name
        raise ValueError(f"torch.fx could not trace the forward of {type(model).__name__}'s base: "
                         f"{type(exc).__name__}: {exc}") from exc
    return GraphModule(model, graph, class_name=type(model).__name__)


def model_with_region(model: torch.nn.Module, base_forward: Callable[..., Any], ops: Sequence[str],
                      wrap: Callable[[GraphModule], torch.nn.Module]) -> GraphModule:
    """`model` traced through `base_forward` (trace_base), with the window of `ops` replaced by
    wrap(the window as a module)."""
    traced = trace_base(model, base_forward)
    window = window_of(traced, ops)
    return replace_region(traced, window, wrap(region_module(traced, window)))


_CONVS = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def _merge_key(module: torch.nn.Module) -> Any:
    """What the members of one sibling group share, or None for a module that cannot be merged. The
    class exactly (a subclass may compute otherwise) and no hooks (the merged call would skip them)."""
    if type(module) not in (torch.nn.Linear,) + _CONVS or module._forward_hooks or module._forward_pre_hooks:
        return None
    common = (type(module), module.bias is None, module.weight.dtype, module.weight.device)
    if type(module) is torch.nn.Linear:
        return common + (module.in_features,)
    if module.groups == 1 and module.padding_mode == "zeros":
        return common + (module.in_channels, module.kernel_size, module.stride, module.padding, module.dilation)
    return None


def sibling_groups(module: GraphModule) -> List[List[Node]]:
    """The groups of >= 2 call_module nodes of distinct nn.Linear or nn.Conv1d/2d/3d modules that read
    the same value as their one argument and could be one wider op (_merge_key), in graph order."""
    groups: Dict[Any, List[Node]] = {}
    for node in module.graph.nodes:
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], Node):
            continue
        key = _merge_key(module.get_submodule(str(node.target)))
        group = groups.setdefault((node.args[0], key), []) if key is not None else []
        if key is not None and all(member.target != node.target for member in group):
            group.append(node)
    return [group for group in groups.values() if len(group) >= 2]


def _compiling() -> bool:
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(is_compiling and is_compiling())


class _DerivedWeights(torch.nn.Module):
    """A module that computes with weights derived from other modules' tensors, which stay where they
    are, not registered here. The derived weights are cached until one of those tensors changes (its
    version or storage), and made afresh at each call that torch.compile traces or a CUDA graph
    captures, so that those read the tensors themselves."""

    def __init__(self) -> None:
        super().__init__()
        self.cached: Any = None
        self.key: Any = None

    def _sources(self) -> List[torch.Tensor]:
        raise NotImplementedError

    def _derive(self) -> Any:
        raise NotImplementedError

    def weights(self, x: torch.Tensor) -> Any:
        if _compiling() or (x.is_cuda and torch.cuda.is_current_stream_capturing()):
            return self._derive()
        key = [torch.is_grad_enabled()] + [(t._version, t.data_ptr()) for t in self._sources()]
        if key != self.key:
            self.cached, self.key = self._derive(), key
        return self.cached


class MergedSiblings(_DerivedWeights):
    """Sibling linear or convolution modules as one call: their weights (and biases) concatenated along
    the output channels, the output cut back into each one's slice."""

    def __init__(self, members: Sequence[torch.nn.Module]) -> None:
        super().__init__()
        self.members = list(members)  # a plain list: not registered
        self.sizes = [int(m.weight.shape[0]) for m in self.members]
        self.linear = type(self.members[0]) is torch.nn.Linear

    def _sources(self) -> List[torch.Tensor]:
        return [m.weight for m in self.members] + [m.bias for m in self.members if m.bias is not None]

    def _derive(self) -> Tuple[torch.Tensor, Any]:
        bias = None if self.members[0].bias is None else torch.cat([m.bias for m in self.members])
        return torch.cat([m.weight for m in self.members]), bias

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        weight, bias = self.weights(x)
        first = self.members[0]
        if self.linear:
            out, dim = torch.nn.functional.linear(x, weight, bias), -1
        else:
            out, dim = first._conv_forward(x, weight, bias), 1
        # narrow, not split: a view of split's outputs may not be modified in place (an inplace ReLU).
        starts = [sum(self.sizes[:i]) for i in range(len(self.sizes))]
        return tuple(out.narrow(dim, start, size) for start, size in zip(starts, self.sizes))


def _is_shape_view(node: Node) -> bool:
    """A tensor's .view(shape) (not .view(dtype)): it fails where the tensor's memory does not allow
    that view (a slice, channels-last memory), where .reshape views if it can and copies if not."""
    return node.op == "call_method" and node.target == "view" and \
        not any(isinstance(a, torch.dtype) for a in node.args[1:])


def views_as_reshapes(module: GraphModule) -> int:
    """Each shape view of the module's graph made a reshape, in place; how many."""
    views = [node for node in module.graph.nodes if _is_shape_view(node)]
    for node in views:
        node.target = "reshape"
    module.recompile()
    return len(views)


def merge_siblings(module: GraphModule) -> int:
    """Replaces each of the module's sibling groups by one call of MergedSiblings, in place; the number
    of groups merged. A slice is no longer contiguous as the member's own output was: the members'
    outputs' views become reshapes, which view where they can and copy where a view would fail."""
    groups = sibling_groups(module)
    for i, group in enumerate(groups):
        slot = f"mblast_merged_{i}"
        module.add_submodule(slot, MergedSiblings([module.get_submodule(str(node.target)) for node in group]))
        with module.graph.inserting_before(group[0]):
            call = module.graph.call_module(slot, (group[0].args[0],))
            slices = [module.graph.call_function(operator.getitem, (call, j)) for j in range(len(group))]
        for node, piece in zip(group, slices):
            for user in node.users:
                if _is_shape_view(user) and user.args[0] is node:
                    user.target = "reshape"
            node.replace_all_uses_with(piece)
            module.graph.erase_node(node)
    module.recompile()
    return len(groups)


_BATCHNORMS = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)


def _plain(module: torch.nn.Module, kinds: Tuple[type, ...]) -> bool:
    """Exactly one of `kinds` (a subclass may compute otherwise) and no hooks (a folded call skips them)."""
    return type(module) in kinds and not module._forward_hooks and not module._forward_pre_hooks


def conv_batchnorm_pairs(module: GraphModule) -> List[Tuple[Node, Node]]:
    """The (convolution, batch norm) call_module pairs whose batch norm reads the convolution's output,
    which nothing else reads, and normalizes by its running statistics (eval mode, statistics tracked):
    each pair computes one convolution with rescaled weights and a shifted bias. In training mode batch
    norm normalizes by each batch's own statistics and updates the running ones: nothing folds."""
    pairs: List[Tuple[Node, Node]] = []
    for node in module.graph.nodes:
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        norm = module.get_submodule(str(node.target))
        conv_node = node.args[0]
        if not _plain(norm, _BATCHNORMS) or norm.training or norm.running_mean is None \
                or not isinstance(conv_node, Node) or conv_node.op != "call_module" or len(conv_node.users) != 1 \
                or len(conv_node.args) != 1 or conv_node.kwargs:
            continue
        conv = module.get_submodule(str(conv_node.target))
        if _plain(conv, _CONVS) and conv.out_channels == norm.num_features:
            pairs.append((conv_node, node))
    return pairs


class FoldedConvBatchNorm(_DerivedWeights):
    """A convolution and the eval-mode batch norm after it as one convolution: weight * scale per output
    channel, (bias - running mean) * scale + shift, scale = gamma / sqrt(running var + eps)."""

    def __init__(self, conv: torch.nn.Module, norm: torch.nn.Module) -> None:
        super().__init__()
        self.pair = [conv, norm]  # a plain list: not registered

    def _sources(self) -> List[torch.Tensor]:
        conv, norm = self.pair
        found = [conv.weight, conv.bias, norm.weight, norm.bias, norm.running_mean, norm.running_var]
        return [t for t in found if t is not None]

    def _derive(self) -> Tuple[torch.Tensor, torch.Tensor]:
        conv, norm = self.pair
        scale = torch.rsqrt(norm.running_var + norm.eps)
        if norm.weight is not None:
            scale = scale * norm.weight
        bias = -norm.running_mean if conv.bias is None else conv.bias - norm.running_mean
        bias = bias * scale
        if norm.bias is not None:
            bias = bias + norm.bias
        weight = conv.weight * scale.reshape((-1,) + (1,) * (conv.weight.dim() - 1))
        return weight, bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.weights(x)
        return self.pair[0]._conv_forward(x, weight, bias)


def fold_batchnorms(module: GraphModule) -> int:
    """Replaces each convolution and batch norm pair (conv_batchnorm_pairs) by one call of
    FoldedConvBatchNorm, in place; the number of pairs folded."""
    pairs = conv_batchnorm_pairs(module)
    for i, (conv_node, norm_node) in enumerate(pairs):
        slot = f"mblast_folded_{i}"
        module.add_submodule(slot, FoldedConvBatchNorm(module.get_submodule(str(conv_node.target)),
                                                       module.get_submodule(str(norm_node.target))))
        with module.graph.inserting_before(conv_node):
            call = module.graph.call_module(slot, (conv_node.args[0],))
        norm_node.replace_all_uses_with(call)
        module.graph.erase_node(norm_node)
        module.graph.erase_node(conv_node)
    module.recompile()
    return len(pairs)


def attribute(module: torch.nn.Module, path: str) -> Any:
    """What a get_attr node's dotted target names on the module (a parameter, buffer or constant)."""
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
