"""The program's regions (mblast_regions): capture, op time shares, windows, cutting a window out
and putting another module in its place."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from conftest import PROBLEMS, worker_env
from mblast_regions.cut import model_with_region, window_of
from mblast_regions.extract import region_module, replace_region, same_outputs
from mblast_regions.graph import capture
from mblast_regions.timing import op_times, time_shares
from mblast_regions.windows import Window, region_windows


class ConvBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 6 * 6, 5)
        self.scale = nn.Parameter(torch.full((1,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc((y * self.scale).flatten(1))


class TwoBranches(nn.Module):
    """Two chains that read the same input and meet at the end."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.sin(x).exp()
        b = torch.cos(x).neg()
        return a + b


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 3, 3, padding=1)
        self.conv2 = nn.Conv2d(3, 3, 3, padding=1)
        self.fc = nn.Linear(3 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        return self.fc((self.conv2(y) + x + y).flatten(1))


class ResidualNew(Residual):
    """A subclass whose own forward must not be the one traced."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise AssertionError("the subclass's forward was traced")


class ValueDependent(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.sum() > 0 else x - 1


def _inputs() -> list:
    torch.manual_seed(0)
    return [torch.randn(2, 3, 6, 6)]


def test_a_model_is_captured_as_ops_in_order_with_their_reads_and_shapes() -> None:
    captured = capture(ConvBlock().eval(), _inputs())
    assert captured.failure is None and captured.graph is not None
    graph = captured.graph
    assert [op.name for op in graph.ops] == ["conv", "bn", "relu", "mul", "flatten", "fc"]
    assert graph.op("conv").kind == "module" and graph.op("conv").op_type == "Conv2d"
    assert graph.op("conv").reads == ["x"] and graph.op("conv").shape == [2, 8, 6, 6]
    assert graph.op("mul").reads == ["relu"]  # the parameter it reads is no op
    assert graph.op("fc").shape == [2, 5] and graph.outputs == ["fc"]


def test_a_model_whose_control_flow_depends_on_values_is_not_captured_and_says_why() -> None:
    captured = capture(ValueDependent(), _inputs())
    assert captured.module is None and captured.graph is None
    assert captured.failure is not None and "trace" in captured.failure


def test_every_op_gets_a_measured_share_and_the_shares_add_up() -> None:
    captured = capture(ConvBlock().eval(), _inputs())
    assert captured.module is not None and captured.graph is not None
    seconds = op_times(captured.module, _inputs(), repeats=3)
    assert set(seconds) == {op.name for op in captured.graph.ops} and all(s > 0 for s in seconds.values())
    assert abs(sum(time_shares(seconds).values()) - 1.0) < 1e-9


def test_windows_are_consecutive_connected_ops_closed_by_their_share() -> None:
    graph = capture(ConvBlock().eval(), _inputs()).graph
    assert graph is not None
    shares = {"conv": 0.5, "bn": 0.1, "relu": 0.1, "mul": 0.1, "flatten": 0.0, "fc": 0.2}
    windows = region_windows(graph, shares, target_share=0.25)
    assert [w.ops for w in windows] == [["conv"], ["bn", "relu", "mul"], ["flatten", "fc"]]
    assert windows[1].inputs == ["conv"] and windows[1].outputs == ["mul"]
    assert abs(windows[1].share - 0.3) < 1e-9
    # A window under the smallest share is left to the rest of the model.
    assert [w.ops for w in region_windows(graph, shares, target_share=0.25, min_share=0.25)] == [
        ["conv"], ["bn", "relu", "mul"]]


def test_a_branch_that_does_not_read_the_window_starts_a_new_one() -> None:
    graph = capture(TwoBranches(), _inputs()).graph
    assert graph is not None
    shares = {op.name: 0.2 for op in graph.ops}
    windows = region_windows(graph, shares, target_share=1.0)
    assert sorted(w.ops for w in windows) == [["cos", "neg", "add"], ["sin", "exp"]]
    first = next(w for w in windows if w.ops[0] == "sin")
    assert first.inputs == ["x"] and first.outputs == ["exp"]  # read by add, after it


def test_a_window_cut_out_and_put_back_computes_what_the_model_does() -> None:
    model = ConvBlock().eval()
    captured = capture(model, _inputs())
    assert captured.module is not None and captured.graph is not None
    for window in region_windows(captured.graph, time_shares(op_times(captured.module, _inputs())), min_share=0.0):
        region = region_module(captured.module, window)
        assert same_outputs(model, replace_region(captured.module, window, region), _inputs()), window.ops
    assert same_outputs(model, captured.module, _inputs())  # replacing left the captured module as it was


def test_a_region_replaced_by_another_implementation_changes_only_that_region() -> None:
    model = TwoBranches()
    captured = capture(model, _inputs())
    assert captured.module is not None
    window = Window(ops=["sin", "exp"], share=0.4, inputs=["x"], outputs=["exp"])

    class Doubled(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 2 * torch.sin(x).exp()

    replaced = replace_region(captured.module, window, Doubled())
    x = _inputs()[0]
    assert torch.allclose(replaced(x), 2 * torch.sin(x).exp() - torch.cos(x))


def test_the_command_line_prints_the_graph_and_windows_of_a_problem() -> None:
    done = subprocess.run([sys.executable, "-m", "mblast_regions", str(PROBLEMS / "conv_small.py")], env=worker_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["captured"] is True and result["ops"] and result["windows_recompose"] is True
    assert all(w["signature"].startswith(w["kinds"] + "|") and len(w["key"]) == 16 for w in result["windows"])
    # Each window's code, for the agents: the submodules it calls, then its forward, without fx's frees.
    conv = next(w for w in result["windows"] if w["ops"] == ["conv"])
    assert conv["code"].startswith("# self.conv = Conv2d(3, 8, kernel_size=(3, 3)")
    assert "def forward(self, x):" in conv["code"] and "= None" not in conv["code"]
    assert abs(sum(op["share"] for op in result["ops"]) - 1.0) < 1e-6
    missing = subprocess.run([sys.executable, "-m", "mblast_regions", str(Path(PROBLEMS / "no_such.py"))],
                             env=worker_env(), capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no_such.py" in missing.stderr


def test_a_model_with_one_region_wrapped_computes_what_it_does_and_shares_its_weights() -> None:
    torch.manual_seed(0)
    model = ResidualNew().eval()
    keys, modules = list(model.state_dict()), dict(model.named_modules())
    cut: list = []
    regioned = model_with_region(model, Residual.forward, ["relu", "conv2", "add"], lambda m: cut.append(m) or m)
    region_ops = [n.name for n in cut[0].graph.nodes if n.op not in ("placeholder", "output")]
    assert region_ops == ["relu", "conv2", "add"]
    assert [n.name for n in cut[0].graph.nodes if n.op == "placeholder"] == ["conv1", "x"]
    x = _inputs()[0]
    reference = Residual().eval()
    reference.load_state_dict(model.state_dict())
    assert same_outputs(reference, regioned, [x])
    with torch.no_grad():
        model.conv2.weight.mul_(2)  # the same parameters, not copies
        reference.conv2.weight.mul_(2)
    assert same_outputs(reference, regioned, [x])
    assert list(model.state_dict()) == keys and dict(model.named_modules()) == modules  # nothing registered
    bound = model_with_region(model, super(ResidualNew, model).forward, ["fc"], lambda m: m)
    assert same_outputs(reference, bound, [x])


def test_a_region_that_is_no_window_of_the_traced_graph_is_refused_with_its_names() -> None:
    model = ResidualNew()
    with pytest.raises(ValueError, match="no op named conv9 in the traced graph; its ops: conv1, relu, conv2"):
        model_with_region(model, Residual.forward, ["relu", "conv9"], lambda m: m)
    with pytest.raises(ValueError, match="not consecutive"):
        model_with_region(model, Residual.forward, ["conv1", "conv2"], lambda m: m)
    traced = capture(TwoBranches(), _inputs()).module
    assert traced is not None
    with pytest.raises(ValueError, match="not connected: cos neither read nor are read by exp"):
        window_of(traced, ["exp", "cos"])
    window = window_of(traced, ["cos", "neg", "add"])
    assert window.inputs == ["x", "exp"] and window.outputs == ["add"]


class TwoSameBlocks(nn.Module):
    """Two blocks of the same configuration at the same shapes, then one at another width."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(4, 4, 3, padding=1)
        self.b = nn.Conv2d(4, 4, 3, padding=1)
        self.c = nn.Conv2d(4, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        y = torch.relu(self.b(y))
        return torch.relu(self.c(y))


def test_the_same_computation_at_the_same_shapes_has_one_key_and_another_width_another() -> None:
    from mblast_regions.identity import region_identity

    torch.manual_seed(0)
    x = torch.randn(2, 4, 16, 16)
    captured = capture(TwoSameBlocks().eval(), [x])
    assert captured.module is not None
    blocks = [window_of(captured.module, ops) for ops in (["a", "relu"], ["b", "relu_1"], ["c", "relu_2"])]
    a, b, c = (region_identity(captured.module, w) for w in blocks)
    assert a["key"] == b["key"]  # other weights, same computation
    assert c["key"] != a["key"]
    assert a["kinds"] == "conv2d>relu" and a["signature"] == f"conv2d>relu|{a['shape_class']}"
    # 2*4*16*16 floats read and as many written: 16 KiB, in the class from 2^12 bytes.
    assert a["shape_class"] == "float32:2^12B"
    assert a["input_shapes"] == ["float32[2,4,16,16]"]
    # The same block at another batch has another key, in the same class here, and the same
    # computation; another width is another computation.
    bigger = capture(TwoSameBlocks().eval(), [torch.randn(3, 4, 16, 16)])
    assert bigger.module is not None
    other = region_identity(bigger.module, window_of(bigger.module, ["a", "relu"]))
    assert other["key"] != a["key"] and other["signature"] == a["signature"]
    assert other["computation"] == a["computation"] == b["computation"] != c["computation"]
    wider = capture(TwoSameBlocks().eval(), [torch.randn(2, 4, 32, 24)])
    assert wider.module is not None
    at_another_size = region_identity(wider.module, window_of(wider.module, ["a", "relu"]))
    assert at_another_size["computation"] == a["computation"] and at_another_size["key"] != a["key"]


class ShortcutBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.shortcut = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(torch.relu(self.conv1(x)))
        return torch.relu(y + self.shortcut(x))


class TwoBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 1)
        self.blocks = nn.Sequential(ShortcutBlock(4), ShortcutBlock(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.stem(x)).mean()


def test_each_block_with_its_shortcut_is_one_window_and_repeated_blocks_share_a_key() -> None:
    from mblast_regions.identity import region_identity

    captured = capture(TwoBlocks().eval(), [torch.randn(2, 3, 8, 8)])
    assert captured.module is not None and captured.graph is not None
    # Shares that would close a window of the model's own ops after every op.
    shares = {op.name: 0.9 / len(captured.graph.ops) for op in captured.graph.ops}
    windows = region_windows(captured.graph, shares, target_share=0.01, min_share=0.0)
    by_first = {w.ops[0]: w for w in windows}
    first, second = by_first["blocks_0_conv1"], by_first["blocks_1_conv1"]
    # The shortcut reads the block's input, not an op before it: still the block's.
    assert first.ops == ["blocks_0_conv1", "relu", "blocks_0_conv2", "blocks_0_shortcut", "add", "relu_1"]
    assert len(second.ops) == 6
    assert region_identity(captured.module, first)["key"] == region_identity(captured.module, second)["key"]
    assert by_first["stem"].ops == ["stem"] and by_first["mean"].ops == ["mean"]
    # Cut out and put back, a block computes what the model does.
    x = torch.randn(2, 3, 8, 8)
    assert same_outputs(captured.module, replace_region(captured.module, first, region_module(captured.module, first)),
                        [x])


class SequentialOnly(nn.Module):
    """Every op inside a container: no block of its own, so windows close by their share."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def test_a_containers_ops_are_the_models_own_and_close_by_their_share() -> None:
    captured = capture(SequentialOnly().eval(), [torch.randn(2, 8)])
    assert captured.graph is not None
    assert {op.owner for op in captured.graph.ops} == {""}
    shares = {op.name: 0.25 for op in captured.graph.ops}
    windows = region_windows(captured.graph, shares, target_share=0.5, min_share=0.0)
    assert sorted(w.ops for w in windows) == [["net_0", "net_1"], ["net_2", "net_3"]]
