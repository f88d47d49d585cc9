"""Reduced sizes (mblast_bundle.shrink) and bundles made from them: shapes stay valid, sizes fit
the budget, every size is divided by the same power of two, and the result is deterministic."""

import json
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
import torch

from conftest import WORKER_DIR, worker_env
from mblast_bundle.bundles import make_bundles
from mblast_worker.errors import TaskError
from mblast_worker.loader import call_input_fn, load_problem
from mblast_bundle.shrink import KEEP_AT_MOST, find_sites, shrink_source

ELEMENTWISE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over a dimension."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)


batch_size = 4096
features = 2048 * 2
dim = 1


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [dim]
'''

DERIVED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross entropy over classes."""

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(x, y)


batch_size = 32768
num_classes = 4096
input_shape = (num_classes,)
unused = 100000


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
'''

CONV = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2D convolution, kernel 5."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch_size = 64
channels = 64
kernel_size = 5


def get_inputs():
    return [torch.rand(batch_size, 3, 224, 224)]


def get_init_inputs():
    return [channels, kernel_size]
'''

GROUPS = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Group norm, 8 groups."""

    def __init__(self, features, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, features)

    def forward(self, x):
        return self.norm(x)


batch_size = 16
features = 64
num_groups = 8
dim1 = 256


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim1)]


def get_init_inputs():
    return [features, num_groups]
'''


def elements_of(source: str, tmp_path: Path) -> int:
    """Inputs + parameters + outputs of one forward of `source`, counted independently."""
    path = tmp_path / "check.py"
    path.write_text(source)
    problem = load_problem(str(path))
    torch.manual_seed(1)
    model = problem.model_cls(*call_input_fn(problem, "get_init_inputs"))
    inputs = call_input_fn(problem, "get_inputs")
    with torch.no_grad():
        out = model(*inputs)
    outs: List[torch.Tensor] = list(out) if isinstance(out, (list, tuple)) else [out]
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)] + list(model.state_dict().values()) + outs
    return sum(t.numel() for t in tensors)


def test_sizes_fit_the_budget_and_are_divided_alike(tmp_path: Path) -> None:
    result = shrink_source(ELEMENTWISE, 65536)
    sizes = {s["name"]: (s["from"], s["to"]) for s in result.sizes}
    assert sizes == {"batch_size": (4096, 4096 // result.factor), "features": (4096, 4096 // result.factor)}
    assert result.factor == 32  # 128 x 128 in and out: 32768 elements; /16 would be 131072
    assert result.elements <= 65536 and result.elements == elements_of(result.source, tmp_path)
    assert "dim = 1" in result.source  # an axis, at most KEEP_AT_MOST, is kept
    assert "features = 128" in result.source  # the expression became the literal it shrinks to


def test_largest_size_under_the_budget_is_chosen(tmp_path: Path) -> None:
    budget = 65536
    result = shrink_source(ELEMENTWISE, budget)
    # The next larger size (half the factor) would not fit.
    bigger = ELEMENTWISE.replace("4096", str(4096 * 2 // result.factor)).replace(
        "2048 * 2", str(4096 * 2 // result.factor))
    assert elements_of(bigger, tmp_path) > budget


def test_deterministic() -> None:
    first, second = shrink_source(CONV, 100000), shrink_source(CONV, 100000)
    assert first.source == second.source and first.report() == second.report()


def test_derived_names_follow_and_unread_names_stay() -> None:
    result = shrink_source(DERIVED, 50000)
    assert "input_shape = (num_classes,)" in result.source
    assert "unused = 100000" in result.source  # get_inputs does not read it
    names = {s["name"] for s in result.sizes}
    assert names == {"batch_size", "num_classes"}


def test_literals_in_get_inputs_shrink_and_the_conv_stays_valid(tmp_path: Path) -> None:
    result = shrink_source(CONV, 100000)
    literal = [s for s in result.sizes if s["name"] == "get_inputs"]
    assert [s["from"] for s in literal] == [224, 224]
    assert all(s["to"] >= 5 for s in literal)  # the kernel still fits
    assert "kernel_size = 5" in result.source and "torch.rand(batch_size, 3," in result.source
    assert elements_of(result.source, tmp_path) == result.elements <= 100000


def test_too_small_sizes_are_skipped_for_ones_that_run() -> None:
    # At the smallest sizes (224 -> 1) a 5x5 kernel does not fit; the shrinker moves up.
    result = shrink_source(CONV, 20000)
    assert all(s["to"] >= 5 for s in result.sizes if s["name"] == "get_inputs")


def test_a_budget_below_the_smallest_size_says_how_many_are_needed() -> None:
    with pytest.raises(TaskError, match=r"holds \d+ or more elements at its smallest reduced sizes"):
        shrink_source(CONV, 10)


def test_no_valid_size_under_the_budget_names_the_cause() -> None:
    # features 64 -> 4 is not divisible by 8 groups, and /8 does not fit.
    with pytest.raises(TaskError, match="num_channels must be divisible by num_groups.*a larger budget"):
        shrink_source(GROUPS, 100000)


def test_a_problem_under_the_budget_is_unchanged() -> None:
    result = shrink_source(ELEMENTWISE.replace("4096", "32").replace("2048 * 2", "32"), 65536)
    assert result.factor == 1 and result.sizes == []
    assert result.source == ELEMENTWISE.replace("4096", "32").replace("2048 * 2", "32")


def test_sites_keep_small_constants() -> None:
    sites = find_sites(CONV)
    assert all((max(s.value) if isinstance(s.value, tuple) else s.value) > KEEP_AT_MOST for s in sites)
    assert {s.name for s in sites} == {"batch_size", "channels", "get_inputs"}


def test_bundles_from_the_shrunken_problem(tmp_path: Path) -> None:
    problem = tmp_path / "softmax.py"
    problem.write_text(ELEMENTWISE)
    meta = make_bundles(str(problem), str(tmp_path / "out"), 1, 1, 0, shrink=65536)
    assert meta["shrink"]["factor"] == 32 and meta["shrink"]["problem_file"] == "problem.py"
    assert meta["inputs"][0]["shape"] == [128, 128]
    assert (tmp_path / "out" / "problem.py").read_text().startswith("# Shrunk by mblast to at most 65536")


def test_command_line_exit_codes(tmp_path: Path) -> None:
    problem = tmp_path / "softmax.py"
    problem.write_text(ELEMENTWISE)
    ok = subprocess.run([sys.executable, "-m", "mblast_bundle", "shrink", str(problem), "--elements", "65536", "--json"],
                        capture_output=True, text=True, env=worker_env(), cwd=WORKER_DIR, check=False)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["factor"] == 32
    bad = subprocess.run([sys.executable, "-m", "mblast_bundle", "shrink", str(problem), "--elements", "1"],
                         capture_output=True, text=True, env=worker_env(), cwd=WORKER_DIR, check=False)
    assert bad.returncode == 2 and "give a budget of at least" in bad.stderr


def test_a_problem_that_fails_at_every_size_is_not_blamed_on_the_budget() -> None:
    # Every size fits the budget, so no larger budget would help: the message says so.
    broken = ELEMENTWISE.replace("return torch.softmax(x, dim=self.dim)", "return torch.no_such_op(x)")
    broken = broken.replace("4096", "32").replace("2048 * 2", "32")
    with pytest.raises(TaskError, match="does not run at any of its sizes under 65536 elements: forward raised"):
        shrink_source(broken, 65536)
    # Where larger sizes exist, the error is given with the size they would need.
    with pytest.raises(TaskError, match=r"no_such_op'; a larger budget \(sizes divided by \d+ hold \d+ or more\)"):
        shrink_source(ELEMENTWISE.replace("return torch.softmax(x, dim=self.dim)", "return torch.no_such_op(x)"),
                      65536)
