"""Built-in techniques: deterministic transforms of a problem's Model that need no LLM.

`make_candidate(problem_source, transform)` returns the source of a self-contained candidate file
(ModelNew) that the judge evaluates like any other. ModelNew subclasses the problem's Model, so the
parameters keep their names and the judge's weight copy applies. The transform names are those of
the seed catalogue's built-in techniques (kb_schema/seed/techniques.json):

  cuda_graph                  capture the whole forward in a CUDA graph once per input signature;
                              each call copies inputs into the graph's buffers, replays, clones out
  torch_compile               torch.compile (default mode)
  torch_compile_max_autotune  torch.compile(mode="max-autotune-no-cudagraphs")
  torch_compile_cudagraphs    torch.compile(mode="reduce-overhead"), each call a new step of its
                              CUDA-graph trees, outputs cloned out
  channels_last               model and 4-D inputs in channels-last memory format (5-D ones in
                              channels_last_3d); the forward traced with torch.fx at the first call
                              with its tensor views as reshapes (a view of a channels-last activation
                              is impossible), as it is where the trace fails
  cudnn_benchmark             cuDNN autotuning during the forward (restored afterwards)
  torch_compile_max_autotune_cd
                              max-autotune-no-cudagraphs plus coordinate-descent tuning of every
                              generated Triton kernel's launch configuration
  tf32                        TF32 matrix math during the forward (needs the precision policy's leave)
  bf16_autocast               autocast to bfloat16, outputs cast back (needs the policy's leave)
  sibling_merge               linear or convolution modules that read the same input (q/k/v projections,
                              Inception's 1x1 branches) as one wider op whose output is cut into their
                              slices; the forward traced with torch.fx at the first call, through
                              mblast_regions/cut.py as region candidates are (below); the base's forward
                              as it is where the trace fails or finds no such modules
  batchnorm_fold              each convolution followed by a batch norm in eval mode (running
                              statistics) as one convolution with rescaled weights and a shifted bias,
                              traced as sibling_merge is; in training mode, where batch norm uses each
                              batch's statistics, nothing folds and no candidate is made

Transforms compose: "A+B" applies A, then B over A's ModelNew (channels_last+torch_compile compiles
the channels-last model; torch_compile+cuda_graph captures the compiled forward in a graph). The
traced transforms (sibling_merge, batchnorm_fold) apply to the problem's Model only, so they come
first: "batchnorm_fold+channels_last+torch_compile" is how the loop stacks a fold under built-ins
it has already applied.

Besides the problem's Model, a transform can wrap an existing candidate's ModelNew
(`make_candidate_over`): the candidate's source is kept verbatim, so the CUDA sources in it still
build, and the transform's ModelNew subclasses it. That is how built-in transforms combine with
LLM kernels (a CUDA graph over a model that calls custom kernels). `reference` is no technique:
the reference itself as a candidate, which the loop judges and profiles as its baseline.

A transform can also apply to one region of the forward only, the rest staying eager
(`make_region_candidate`, `--region`): ModelNew traces its base's forward with torch.fx at its first
call (after the judge has moved it and loaded the weights), cuts out the region's ops (consecutive,
each reading one before it, named as `mblast regions` names them) and calls the traced graph with
the region wrapped, through mblast_regions/cut.py, whose source the candidate embeds. The region
transforms: torch_compile, torch_compile_max_autotune, torch_compile_max_autotune_cd (the region
compiled, with the whole-model modes), cudnn_benchmark (around the region's call) and channels_last
(the region's weights and 4-D inputs in NHWC, its outputs back in the usual layout); one at a time.
Whether the ops are in the graph is known only once the model is built: a candidate whose ops are not
raises a ValueError naming them at its first call, which the judge reports. What can be known from
the files is checked here: the transform takes a region, the ops are distinct names, and over a
candidate, its ModelNew's forward names its arguments (torch.fx cannot trace *args).

Run as `python3 -m mblast_builtin TRANSFORM PROBLEM.py > CANDIDATE.py`, or
`python3 -m mblast_builtin --over TRANSFORM CANDIDATE.py > NEW.py`; either with
`--region OP1,OP2,...` before TRANSFORM for a region.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Dict, Sequence

_HEADER = '''# Built-in technique "{transform}"{scope}, generated by mblast from the problem below: a deterministic
# transform of the reference Model, not code written by a model.
import torch

_PROBLEM_SOURCE = {source!r}
_problem: dict = {{}}
exec(compile(_PROBLEM_SOURCE, "<problem>", "exec"), _problem)
_Base = _problem["Model"]
'''

_OVER_HEADER = '''

# ---- Built-in technique "{transform}"{scope}, added by mblast over the candidate above: a deterministic
# transform of its ModelNew, not code written by a model.
import torch

_Base = ModelNew
'''

_HELPERS = '''

def _map(value, fn):
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    return value


def _prepare_outside_compile(model):
    prepare = getattr(type(model), "_mblast_prepare", None)  # on the class: no Module.__getattr__ miss
    if prepare is not None:
        prepare(model)

'''

_BODIES: Dict[str, str] = {
    "reference": '''
class ModelNew(_Base):
    pass
''',
    "cuda_graph": '''
class ModelNew(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._graph = None
        self._key = None

    def _capture(self, inputs):
        self._static_in = [_map(x, torch.clone) for x in inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):  # warm-up outside the graph: lazy initialisation, autotuning
                super().forward(*self._static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._static_out = super().forward(*self._static_in)
        self._graph = graph

    def forward(self, *inputs):
        key = tuple((x.shape, x.dtype, x.device) if isinstance(x, torch.Tensor) else repr(x)
                    for x in inputs)
        if self._graph is None or key != self._key:
            self._capture(inputs)
            self._key = key
        for static, x in zip(self._static_in, inputs):
            if isinstance(static, torch.Tensor):
                static.copy_(x)
        self._graph.replay()
        return _map(self._static_out, torch.clone)  # the graph's buffers are reused next call
''',
    "torch_compile": '''
class ModelNew(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        base_forward = super().forward  # bound now: the module's names may be rebound later
        self._compiled = torch.compile(lambda *x: base_forward(*x){mode})

    def forward(self, *inputs):
        _prepare_outside_compile(self)
        return self._compiled(*inputs)
''',
    # CUDA-graph trees start a new iteration at a call only when no backward is pending (PyTorch's
    # documentation of torch.compiler.cudagraph_mark_step_begin). A forward timed with grad on
    # whose backward never runs (the judge's and KernelBench's timing, a model with parameters)
    # leaves one pending at every call, so each call is marked as a new step here. A new step lets
    # the replay overwrite the graph's output buffers, hence the copies, as in cuda_graph.
    "torch_compile_cudagraphs": '''
class ModelNew(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        base_forward = super().forward  # bound now: the module's names may be rebound later
        self._compiled = torch.compile(lambda *x: base_forward(*x), mode="reduce-overhead")

    def forward(self, *inputs):
        _prepare_outside_compile(self)
        torch.compiler.cudagraph_mark_step_begin()
        return _map(self._compiled(*inputs), torch.clone)
''',
    "cudnn_benchmark": '''
class ModelNew(_Base):
    def forward(self, *inputs):
        previous = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        try:
            return super().forward(*inputs)
        finally:
            torch.backends.cudnn.benchmark = previous
''',
    "tf32": '''
class ModelNew(_Base):
    def forward(self, *inputs):
        matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        try:
            return super().forward(*inputs)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
''',
    "bf16_autocast": '''
class ModelNew(_Base):
    def forward(self, *inputs):
        device = next((x.device.type for x in inputs if isinstance(x, torch.Tensor)), "cuda")
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            out = super().forward(*inputs)
        return _map(out, lambda t: t.float() if t.is_floating_point() else t)
''',
}


def _traced_once_model(name: str, build: str, call: str) -> str:
    """A ModelNew that makes its model (the expression `build`, over self and super().forward) at the
    first call: after the judge has moved the model and loaded its weights. It is kept in
    self.__dict__["_mblast_<name>"], out of the module's registry (its state dict stays the base's), and
    made again after a move, a cast or a train/eval switch, which the trace would miss (new buffer
    tensors, the training flag a constant). `call` runs the inputs through it, held in `name`.
    _mblast_prepare makes it, and those of the traced layers below, ahead of a call: a compile stacked
    over it calls that outside the compiled function, which then never meets the first call's path
    (a graph break and a write to the module's __dict__ that Dynamo compiled anew at a later call:
    inside a CUDA graph's capture on the H100, benchmarks/h200 call 89)."""
    key = f"_mblast_{name}"
    return f'''

class ModelNew(_Base):
    def _mblast_prepare(self):
        below = getattr(super(), "_mblast_prepare", None)
        if below is not None:
            below()
        if self.__dict__.get("{key}") is None:
            self.__dict__["{key}"] = {build}

    def forward(self, *inputs):
        {name} = self.__dict__.get("{key}")
        if {name} is None:
            {name} = {build}
            self.__dict__["{key}"] = {name}
        return {call}

    def _apply(self, *args, **kwargs):
        self.__dict__.pop("{key}", None)
        return super()._apply(*args, **kwargs)

    def train(self, mode=True):
        self.__dict__.pop("{key}", None)
        return super().train(mode)
'''


# Traced at the first call, as the region candidates' model is (_REGION_MODEL below), and changed in
# place by one of cut.py's graph transforms; False (the base's forward as it is) where the trace fails
# or the transform finds nothing. The new modules read the model's parameters: nothing is copied.
# Built-ins stacked over it ("batchnorm_fold+torch_compile") may reach the first call through
# torch.compile: the trace runs outside it (torch.compiler.disable), where that exists.
_CHANGED_GRAPH = '''

def _outside_compile(fn):
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(fn) if disable is not None else fn


@_outside_compile
def _changed_graph(model, base_forward, change, in_training=True):
    if model.training and not in_training:
        return False
    try:
        traced = _cut["trace_base"](model, base_forward)
    except ValueError:
        return False
    return traced if _cut[change](traced) else False
'''


def _traced_body(name: str, call: str) -> str:
    return _CHANGED_GRAPH + _traced_once_model(name, f"_changed_graph(self, super().forward, {call})",
                                               f"super().forward(*inputs) if {name} is False else {name}(*inputs)")


_BODIES["sibling_merge"] = _traced_body("merged", '"merge_siblings"')
# Batch norm in training mode normalizes by each batch's statistics: nothing folds.
_BODIES["batchnorm_fold"] = _traced_body("folded", '"fold_batchnorms", in_training=False')

_TRACED_TRANSFORMS = ("sibling_merge", "batchnorm_fold")

# In channels-last memory a view of a convolution's output (x.view(n, -1) before a linear layer, as
# LeNet5 does) is impossible, so the forward runs traced with its tensor views as reshapes: the same
# where a view is possible, a copy where it is not. The base's forward as it is where the trace fails
# (a forward torch.fx cannot trace, another candidate's ModelNew) or shows no view.
# The layout rule of the whole-model and the region transform alike.
_TO_CHANNELS_LAST = '''

def _to_channels_last(x):
    """NHWC for 4-D tensors, NDHWC for 5-D ones (3-D convolutions); anything else as it is."""
    if not isinstance(x, torch.Tensor) or x.dim() not in (4, 5):
        return x
    return x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
'''

_BODIES["channels_last"] = _CHANGED_GRAPH + _TO_CHANNELS_LAST + '''

class _ChannelsLast(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # As Module.to(memory_format=...) converts, but by rank: channels_last alone refuses 5-D weights.
        self._apply(_to_channels_last)


def _in_channels_last(forward, inputs):
    out = forward(*[_map(x, _to_channels_last) for x in inputs])
    return _map(out, lambda t: t.contiguous())


_Base = _ChannelsLast
''' + _traced_once_model(
    "reshaped", '_changed_graph(self, super().forward, "views_as_reshapes")',
    "_in_channels_last(super().forward if reshaped is False else reshaped, inputs)")

_COMPILE_MODES = {
    "torch_compile": "",
    "torch_compile_max_autotune": ', mode="max-autotune-no-cudagraphs"',
    # torch.compile takes a mode or options, not both: max-autotune-no-cudagraphs spelled out.
    "torch_compile_max_autotune_cd": ', options={"max_autotune": True, "triton.cudagraphs": False, '
                                     '"coordinate_descent_tuning": True}',
}

TRANSFORMS = tuple(sorted(set(_BODIES) - {"torch_compile"} | set(_COMPILE_MODES)))

_CUT_PATH = Path(__file__).resolve().parent / "mblast_regions" / "cut.py"

# Compiled on its own: its dataclass needs evaluated annotations, whatever compiled the candidate.
_REGION_CUT = '''_cut: dict = {"__name__": "mblast_regions_cut"}
exec(compile(_CUT_SOURCE, "<mblast_regions/cut.py>", "exec", dont_inherit=True), _cut)
'''

_REGION_WRAPS: Dict[str, str] = {
    "cudnn_benchmark": '''

class _CudnnBenchmarkRegion(torch.nn.Module):
    def __init__(self, region):
        super().__init__()
        self.region = region

    def forward(self, *inputs):
        previous = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        try:
            return self.region(*inputs)
        finally:
            torch.backends.cudnn.benchmark = previous


_wrap_region = _CudnnBenchmarkRegion
''',
    "torch_compile": '''

def _wrap_region(region):
    return torch.compile(region{mode})
''',
    "channels_last": _TO_CHANNELS_LAST + '''

def _contiguous(value):
    if isinstance(value, torch.Tensor):
        return value.contiguous()
    if isinstance(value, (list, tuple)):
        return type(value)(_contiguous(v) for v in value)
    return value


class _ChannelsLastRegion(torch.nn.Module):
    """The region's weights and 4-D (5-D) inputs in NHWC (NDHWC); what it returns in the usual layout,
    so the rest of the model runs as it did."""

    def __init__(self, region):
        super().__init__()
        self.region = region._apply(_to_channels_last)

    def forward(self, *inputs):
        return _contiguous(self.region(*[_to_channels_last(x) for x in inputs]))


_wrap_region = _ChannelsLastRegion
''',
}

# The model with its region wrapped, made at the first call (_traced_once_model).
_REGION_MODEL = _traced_once_model(
    "regioned", '_cut["model_with_region"](self, super().forward, _REGION_OPS, _wrap_region)', "regioned(*inputs)")

REGION_TRANSFORMS = tuple(sorted({"channels_last", "cudnn_benchmark"} | set(_COMPILE_MODES)))


def _body(transform: str) -> str:
    if transform in _COMPILE_MODES:
        return _BODIES["torch_compile"].replace("{mode}", _COMPILE_MODES[transform])
    if transform in _TRACED_TRANSFORMS or transform == "channels_last":
        return f"\n_CUT_SOURCE = {_CUT_PATH.read_text(encoding='utf-8')!r}\n" + _REGION_CUT + _BODIES[transform]
    if transform in _BODIES:
        return _BODIES[transform]
    raise ValueError(f"unknown built-in transform {transform!r}; known: {', '.join(TRANSFORMS)}")


def _steps(transform: str) -> list[str]:
    steps = transform.split("+")
    for step in steps:
        _body(step)  # unknown names fail before anything is written
    return steps


def make_candidate(problem_source: str, transform: str) -> str:
    """The candidate file for `transform` (one name, or names joined by '+', applied in order)
    applied to the problem whose source is given."""
    first, *rest = _steps(transform)
    source = _HEADER.format(transform=first, scope="", source=problem_source) + _HELPERS + _body(first)
    for step in rest:
        source = make_candidate_over(source, step)
    return source


def make_candidate_over(candidate_source: str, transform: str) -> str:
    """The candidate file for `transform` applied to the ModelNew of an existing candidate."""
    if "ModelNew" not in candidate_source:
        raise ValueError("the candidate defines no ModelNew to build on")
    for step in _steps(transform):
        candidate_source = (candidate_source.rstrip("\n") + "\n" + _OVER_HEADER.format(transform=step, scope="")
                            + _HELPERS + _body(step))
    return candidate_source


def make_region_candidate(source: str, transform: str, ops: Sequence[str], over: bool = False) -> str:
    """The candidate file for `transform` applied to the region of `ops` only. The base is the problem's
    Model in `source`, or with `over` the ModelNew of the candidate in `source`, kept verbatim. In a
    composition "R+W+...", R applies to the region and W, ... to the whole model over it (a CUDA graph
    around the model with a compiled region: the region judged where the graph-first round runs it)."""
    transform, *whole = transform.split("+")
    if transform not in REGION_TRANSFORMS:
        raise ValueError(f"{transform!r} takes no region; the transforms that take a region: "
                         f"{', '.join(REGION_TRANSFORMS)}")
    if whole:
        _steps("+".join(whole))  # unknown names fail before anything is made
        return make_candidate_over(make_region_candidate(source, transform, ops, over), "+".join(whole))
    ops = list(ops)
    if not ops or len(set(ops)) != len(ops) or not all(op.isidentifier() for op in ops):
        raise ValueError(f"a region is distinct op names as mblast regions shows them, got {','.join(ops)!r}")
    scope = f" over the region {', '.join(ops)} (torch.fx ops of the\n# forward; the rest stays eager)"
    if over:
        _check_base_traceable(source)
        head = source.rstrip("\n") + "\n" + _OVER_HEADER.format(transform=transform, scope=scope)
    else:
        head = _HEADER.format(transform=transform, scope=scope, source=source)
    wrap = _REGION_WRAPS["torch_compile"].replace("{mode}", _COMPILE_MODES[transform]) \
        if transform in _COMPILE_MODES else _REGION_WRAPS[transform]
    return (head + f"\n_CUT_SOURCE = {_CUT_PATH.read_text(encoding='utf-8')!r}\n" + _REGION_CUT
            + f"_REGION_OPS = {ops!r}\n" + wrap + _REGION_MODEL)


def _cut_as_candidates_run_it() -> dict:
    """mblast_regions/cut.py run as a candidate runs it (mblast_builtin imports no other package)."""
    cut: dict = {"__name__": "mblast_regions_cut"}
    exec(compile(_CUT_PATH.read_text(encoding="utf-8"), str(_CUT_PATH), "exec", dont_inherit=True), cut)
    return cut


def sibling_groups(model) -> list[list[str]]:  # noqa: ANN001 - a torch.nn.Module; torch is imported late
    """The submodules that sibling_merge merges in `model`, by name, group by group: its forward traced as
    the candidate traces its base's (a ValueError where torch.fx cannot), with cut.py run as the candidate
    runs it (mblast_builtin imports no other package)."""
    cut = _cut_as_candidates_run_it()
    traced = cut["trace_base"](model, type(model).forward)
    return [[str(node.target) for node in group] for group in cut["sibling_groups"](traced)]


def batchnorm_pairs(model) -> list[list[str]]:  # noqa: ANN001 - a torch.nn.Module
    """The (convolution, batch norm) submodules that batchnorm_fold folds in `model`, by name, traced as
    the candidate traces its base's."""
    cut = _cut_as_candidates_run_it()
    traced = cut["trace_base"](model, type(model).forward)
    return [[str(conv.target), str(norm.target)] for conv, norm in cut["conv_batchnorm_pairs"](traced)]


def _check_base_traceable(candidate_source: str) -> None:
    if "ModelNew" not in candidate_source:
        raise ValueError("the candidate defines no ModelNew to build on")
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError as exc:
        raise ValueError(f"the candidate does not parse: {exc}") from exc
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "ModelNew"]
    forwards = [node for node in (classes[-1].body if classes else [])
                if isinstance(node, ast.FunctionDef) and node.name == "forward"]
    if forwards and (forwards[-1].args.vararg or forwards[-1].args.kwarg):
        raise ValueError("the candidate's ModelNew.forward takes *args or **kwargs, which torch.fx cannot trace: "
                         "a region needs a base whose forward names its arguments")


NOTHING_TO_CHANGE = 3  # main's exit code where a transform would give a candidate no different from its base


_NOTHING_FOUND = {
    "sibling_merge": "no linear or convolution modules read the same input in the Model's forward",
    "batchnorm_fold": "no convolution is followed by a batch norm that only it feeds in the Model's forward",
}


def nothing_to_change(source: str, transforms: Sequence[str], over: bool) -> Dict[str, str]:
    """Each transform to why it would change nothing here ("" where it may). Only the traced ones
    (sibling_merge, batchnorm_fold) can tell: they change only what the problem's Model's forward shows
    when traced, and built-in candidates' forwards (*inputs) do not trace. The Model is built once, as
    the problem builds it, on the meta device where torch has one (no memory, no time)."""
    why = {transform: "" for transform in transforms}
    traced = [transform for transform in transforms if transform in _TRACED_TRANSFORMS]
    if over:
        why.update({t: f"{t} applies to the problem's Model, not over another candidate" for t in traced})
        return why
    if not traced:
        return why
    import torch  # noqa: PLC0415 - only this check needs torch at generation time

    problem: dict = {"__name__": "mblast_problem"}
    try:
        exec(compile(source, "<problem>", "exec"), problem)
        device = torch.device("meta") if hasattr(torch.device, "__enter__") else None
        with device if device is not None else torch.no_grad():
            model = problem["Model"](*problem["get_init_inputs"]())
    except Exception:  # noqa: BLE001 - what cannot be checked here is left to the judge
        return why
    why.update({transform: _why_unchanged(model, transform) for transform in traced})
    return why


def _why_unchanged(model, transform: str) -> str:  # noqa: ANN001 - a torch.nn.Module
    if transform == "batchnorm_fold" and model.training:
        return ("the Model runs in training mode, where batch norm normalizes by each batch's own "
                "statistics: nothing folds")
    try:
        found = (sibling_groups if transform == "sibling_merge" else batchnorm_pairs)(model)
    except ValueError as exc:  # the trace failed: the candidate's would too, and it runs the forward as it is
        first = str(exc).split(". ")[0].rstrip(".")  # torch.fx's advice that follows is for authors
        return f"{first}: the candidate would run the Model's forward unchanged"
    except Exception:  # noqa: BLE001 - what cannot be checked here is left to the judge
        return ""
    return "" if found else _NOTHING_FOUND[transform]


def check_main(transforms: list[str], source: str) -> int:
    """`--check T1,T2 FILE`: one JSON object, each transform to why it would change nothing in the
    problem's Model ("" where it may change something). The driver asks it once per run, beside
    the reference's evaluation, instead of spending a step per transform to find out."""
    unknown = sorted(set(transforms) - set(TRANSFORMS))
    if unknown:
        print(f"mblast_builtin: unknown transform(s) {', '.join(unknown)} (known: {', '.join(TRANSFORMS)})",
              file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(nothing_to_change(source, transforms, False)) + "\n")
    return 0


def main(argv: list[str]) -> int:
    check = argv[:1] == ["--check"] and len(argv) == 3
    over, ops = False, None
    while not check and (argv[:1] == ["--over"] or (argv[:1] == ["--region"] and len(argv) > 1)):
        if argv[0] == "--over":
            over, argv = True, argv[1:]
        else:
            ops, argv = [op.strip() for op in argv[1].split(",")], argv[2:]
    if len(argv) != 2 + check:
        print("usage: python3 -m mblast_builtin [--over] [--region OP1,OP2,...] TRANSFORM FILE.py  |  "
              "python3 -m mblast_builtin --check TRANSFORM1,TRANSFORM2 FILE.py  "
              f"(TRANSFORM: {', '.join(TRANSFORMS)}; with --region: {', '.join(REGION_TRANSFORMS)})", file=sys.stderr)
        return 2
    transform, path = argv[-2:]
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        if check:
            return check_main([t.strip() for t in transform.split(",") if t.strip()], source)
        first = transform.split("+")[0]
        why_not = nothing_to_change(source, [first], over)[first] if ops is None else ""
        if why_not:
            print(f"mblast_builtin: nothing to change: {why_not}", file=sys.stderr)
            return NOTHING_TO_CHANGE
        if ops is not None:
            sys.stdout.write(make_region_candidate(source, transform, ops, over))
        else:
            make = make_candidate_over if over else make_candidate
            sys.stdout.write(make(source, transform))
    except (OSError, ValueError) as exc:
        print(f"mblast_builtin: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
