"""The batchnorm_fold built-in: a convolution and the eval-mode batch norm after it as one convolution."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from conftest import WORKER_DIR, worker_env
from mblast_builtin import NOTHING_TO_CHANGE, batchnorm_pairs, make_candidate

CONV_BN = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8, affine=False)
        self.conv3 = nn.Conv2d(8, 8, 1)
        self.bn3 = nn.BatchNorm2d(8)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        z = self.conv3(y)  # read twice: its batch norm cannot fold
        return self.bn3(z) + z


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [3]
"""

TRAINING = CONV_BN.replace("        self.eval()\n", "")


def _load(source: str) -> dict:
    namespace: dict = {"__name__": "mblast_test_problem"}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def _with_statistics(model: torch.nn.Module) -> torch.nn.Module:
    """Running statistics and affine parameters away from their defaults, so that folding them shows."""
    torch.manual_seed(3)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
            if module.affine:
                module.weight.data.uniform_(0.5, 1.5)
                module.bias.data.uniform_(-0.5, 0.5)
    return model


def test_the_pairs_whose_convolution_only_the_batch_norm_reads_fold() -> None:
    model = _load(CONV_BN)["Model"](3)
    assert batchnorm_pairs(model) == [["conv1", "bn1"], ["conv2", "bn2"]]
    assert batchnorm_pairs(_load(TRAINING)["Model"](3)) == []


def test_a_folded_model_computes_what_the_model_does_and_follows_its_parameters() -> None:
    torch.manual_seed(0)
    reference = _with_statistics(_load(CONV_BN)["Model"](3))
    namespace = _load(make_candidate(CONV_BN, "batchnorm_fold"))
    model = namespace["ModelNew"](3)
    model.load_state_dict(reference.state_dict())
    x = torch.randn(2, 3, 8, 8)
    assert torch.allclose(model(x), reference(x), atol=1e-5)
    traced = model.__dict__["_mblast_folded"]
    calls = [traced.get_submodule(str(n.target)) for n in traced.graph.nodes if n.op == "call_module"]
    assert sum(isinstance(m, namespace["_cut"]["FoldedConvBatchNorm"]) for m in calls) == 2
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in calls) == 1  # bn3 stays
    assert list(model.state_dict()) == list(reference.state_dict())  # nothing registered
    # New statistics in place: the cached folded weights are stale and made again.
    with torch.no_grad():
        reference.bn1.running_mean.add_(0.5)
    model.load_state_dict(reference.state_dict())
    assert model.__dict__["_mblast_folded"] is traced
    assert torch.allclose(model(x), reference(x), atol=1e-5)
    # In training mode batch norm normalizes by the batch: the base's forward runs.
    model.train()
    reference.train()
    assert torch.allclose(model(x), reference(x), atol=1e-5)
    assert model.__dict__["_mblast_folded"] is False


def test_no_candidate_is_made_for_a_model_in_training_mode(tmp_path: Path) -> None:
    def generate(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mblast_builtin", "batchnorm_fold", str(path)],
                              capture_output=True, text=True, env=worker_env(), cwd=str(WORKER_DIR))

    training, evaluating = tmp_path / "training.py", tmp_path / "eval.py"
    training.write_text(TRAINING)
    evaluating.write_text(CONV_BN)
    refused = generate(training)
    assert refused.returncode == NOTHING_TO_CHANGE and "training mode" in refused.stderr and not refused.stdout
    made = generate(evaluating)
    assert made.returncode == 0 and "class ModelNew" in made.stdout
