"""Profile signatures on the CPU: the metrics the state classifier reads."""

from __future__ import annotations

import torch

from mblast_worker.signature import build_signature, profile_forward, profiled_runs


class _Chain(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2.0 + 1.0).sum(dim=1)


def test_profile_counts_ops_per_forward() -> None:
    model = _Chain()
    x = torch.randn(64, 256)
    profiled = profile_forward(lambda: model(x), torch.device("cpu"), runs=3)
    names = set(profiled["ops"])
    assert {"aten::mul", "aten::add", "aten::relu", "aten::sum"} <= names
    assert all(count == 1 for _, count in (profiled["ops"][n] for n in ("aten::mul", "aten::sum")))
    assert profiled["busy_ms"] > 0


def test_long_forwards_are_profiled_fewer_times() -> None:
    assert profiled_runs(None) == 3 and profiled_runs(0.02) == 3 and profiled_runs(float("nan")) == 3
    assert profiled_runs(12.0) == 2  # 30 ms of forwards, at least one
    assert profiled_runs(37.0) == 1 and profiled_runs(5000.0) == 1


def test_regions_are_top_level_ops_with_their_callees() -> None:
    model = _Chain()
    x = torch.randn(64, 256)
    profiled = profile_forward(lambda: model(x), torch.device("cpu"), runs=3)
    assert "aten::clamp_min" in profiled["ops"] or "aten::relu" in profiled["ops"]
    assert set(profiled["regions"]) == {"aten::mul", "aten::add", "aten::relu", "aten::sum"}
    sig = build_signature(profiled, total_ms=1.0, on_gpu=False)
    assert abs(sum(r["share"] for r in sig["regions"]) - 1.0) < 1e-9


def test_regions_come_from_the_profilers_call_tree() -> None:
    """The call tree, not microsecond time ranges, decides what is top-level: under load the
    ranges made relu's clamp_min a region in 5 runs of 12."""
    from torch.profiler import ProfilerActivity, profile

    from mblast_worker.signature import _top_level_ids

    x = torch.randn(64, 256)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(50):
            _Chain()(x)
    top = _top_level_ids(prof)
    assert top is not None
    names = {e.name for e in prof.events() if e.id in top}
    assert names == {"aten::mul", "aten::add", "aten::relu", "aten::sum"}
    assert sum(1 for e in prof.events() if e.id in top) == 4 * 50


def test_signature_has_classifier_metrics_and_shares() -> None:
    profiled = {"ops": {"aten::mm": (0.6, 1), "aten::relu": (0.2, 1)}, "kernels": {},
                "busy_ms": 0.8, "span_ms": 0.0}
    sig = build_signature(profiled, total_ms=1.0, on_gpu=False)
    assert sig["kernel_count"] == 2.0
    # The driver adds the speed-of-light fractions (speed_of_light.hpp), for every backend alike.
    assert not {"arithmetic_intensity", "memory_sol_fraction", "compute_sol_fraction", "sol_fraction"} & set(sig)
    assert [op["name"] for op in sig["ops"]] == ["aten::mm", "aten::relu"]
    assert abs(sig["ops"][0]["share"] - 0.75) < 1e-9


def test_gpu_signature_measures_idle_time_and_tensor_cores() -> None:
    profiled = {"ops": {}, "kernels": {"sm90_xmma_gemm_f32": (0.3, 1), "elementwise_kernel": (0.1, 4)},
                "busy_ms": 0.4, "span_ms": 0.9}
    sig = build_signature(profiled, total_ms=1.0, on_gpu=True)
    assert sig["kernel_count"] == 5.0
    assert abs(sig["launch_overhead_fraction"] - 0.6) < 1e-9
    assert abs(sig["tensor_core_fraction"] - 0.75) < 1e-9
    assert abs(sig["mean_kernel_us"] - 80.0) < 1e-9
    assert sig["kernels"][0]["name"] == "sm90_xmma_gemm_f32"
