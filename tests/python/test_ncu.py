"""Nsight Compute in the worker (ncu.py, ncu_target.py): the raw CSV page, the aggregation into the
signature's numbers, the request's fields, and the runner, through tests/python/fake_ncu/ncu (a
stand-in with ncu's command line that runs the target and writes a raw page)."""

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch

from conftest import ROOT, cpu_candidate, eval_request, evaluate_many, problem, worker_env
from mblast_worker import ncu
from mblast_worker.errors import RequestError
from mblast_worker.ncu import DURATION, HMMA, TENSOR, KernelRow
from mblast_worker.ncu_target import TargetSpec
from mblast_worker.request import PROFILERS, parse_request
from protocol_schema import definition, request_errors

FAKE_NCU = str(Path(__file__).resolve().parent / "fake_ncu" / "ncu")
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
BRANCH = "smsp__sass_average_branch_targets_threads_uniform.pct"

RAW_PAGE = '''==PROF== Connected to process 812 (/usr/bin/python3)
==WARNING== Backing up device memory in system memory. Kernel replay might be slow.
==PROF== Disconnected from process 812
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","dram__bytes_read.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","smsp__sass_average_branch_targets_threads_uniform.pct"
"","","","","","","","","","","","nsecond","byte","%","%"
"0","812","python3","127.0.0.1","void gemm<float, 4>(const float *, float *)","1","7","(256, 1, 1)","(80, 1, 1)","0","9.0","1,234,567","12,345,678","81.5","n/a"
"1","812","python3","127.0.0.1","elementwise_kernel","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0","2,000","","7.25",""
'''


def _kernel(name: str, duration_ns: float, metrics: Dict[str, float]) -> KernelRow:
    return KernelRow(name, {DURATION: duration_ns, **metrics})


# ---- the raw page -------------------------------------------------------------------------------


def test_the_raw_page_is_read_past_its_preamble_with_separators_and_missing_values() -> None:
    rows = ncu.parse_csv(RAW_PAGE + "==PROF== Report: trailing line\n")
    assert [r.name for r in rows] == ["void gemm<float, 4>(const float *, float *)", "elementwise_kernel"]
    first, second = rows
    assert first.values[DURATION] == 1234567.0
    assert first.values["dram__bytes_read.sum"] == 12345678.0
    assert first.values[DRAM] == 81.5
    assert BRANCH not in first.values  # n/a
    assert second.values == {DURATION: 2000.0, DRAM: 7.25}  # "" is missing too
    assert "ID" not in first.values and "Block Size" not in first.values


def test_a_scaled_unit_is_brought_back_to_base_units() -> None:
    page = ('"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_write.sum"\n'
            '"","","usecond","Kbyte"\n'
            '"0","k","1.5","2"\n')
    (row,) = ncu.parse_csv(page)
    assert row.values == {DURATION: 1500.0, "dram__bytes_write.sum": 2000.0}


def test_a_log_without_a_report_has_no_rows() -> None:
    assert ncu.parse_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []
    assert ncu.parse_csv("") == []


# ---- aggregation --------------------------------------------------------------------------------


def test_fractions_are_means_weighted_by_each_kernels_duration() -> None:
    rows = [_kernel("long", 3000.0, {DRAM: 20.0}), _kernel("short", 1000.0, {DRAM: 80.0})]
    out = ncu.aggregate(rows)
    assert out["dram_throughput_fraction"] == pytest.approx((3000 * 0.2 + 1000 * 0.8) / 4000)  # 0.35, not 0.5
    assert out["ncu_kernel_count"] == 2.0
    assert out["ncu_busy_ms"] == pytest.approx(0.004)


def test_a_metric_only_some_kernels_have_is_weighted_over_those() -> None:
    rows = [_kernel("a", 3000.0, {DRAM: 20.0}), _kernel("b", 1000.0, {})]
    assert ncu.aggregate(rows)["dram_throughput_fraction"] == pytest.approx(0.2)


def test_the_tensor_pipe_is_the_larger_of_hmma_and_the_whole_pipe() -> None:
    rows = [_kernel("hopper", 1000.0, {HMMA: 10.0, TENSOR: 70.0}), _kernel("ampere", 1000.0, {HMMA: 30.0})]
    assert ncu.aggregate(rows)["tensor_pipe_fraction"] == pytest.approx((0.7 + 0.3) / 2)


def test_stall_fractions_are_groups_over_every_stall_reason_present() -> None:
    stall = ncu.stall_metric
    rows = [_kernel("a", 3000.0, {stall("long_scoreboard"): 30.0, stall("barrier"): 10.0, stall("wait"): 20.0,
                                  stall("math_pipe_throttle"): 20.0, stall("selected"): 20.0}),
            _kernel("b", 1000.0, {stall("long_scoreboard"): 60.0, stall("wait"): 20.0, stall("selected"): 20.0})]
    out = ncu.aggregate(rows)
    total = 3000 * 100 + 1000 * 100
    assert out["stall_memory_fraction"] == pytest.approx((3000 * 30 + 1000 * 60) / total)
    assert out["stall_sync_fraction"] == pytest.approx(3000 * 10 / total)
    assert out["stall_exec_dependency_fraction"] == pytest.approx((3000 * 20 + 1000 * 20) / total)
    assert out["stall_math_fraction"] == pytest.approx(3000 * 20 / total)


def test_sums_count_bytes_and_local_sectors() -> None:
    rows = [_kernel("a", 1.0, {ncu.DRAM_READ: 100.0, ncu.DRAM_WRITE: 50.0, ncu.LOCAL_LD: 2.0}),
            _kernel("b", 1.0, {ncu.DRAM_READ: 10.0, ncu.LOCAL_ST: 1.0})]
    out = ncu.aggregate(rows)
    assert out["dram_bytes"] == 160.0
    assert out["local_memory_bytes"] == 3 * 32


def test_keys_whose_metrics_are_missing_are_left_out_and_listed() -> None:
    rows = [_kernel("a", 1000.0, {DRAM: 50.0})]
    out = ncu.aggregate(rows)
    assert set(out) == {"ncu_kernel_count", "ncu_busy_ms", "dram_throughput_fraction"}
    missing = ncu.missing_metrics(ncu.METRICS, rows)
    assert DURATION not in missing and DRAM not in missing
    assert BRANCH in missing and TENSOR in missing and len(missing) == len(ncu.METRICS) - 2
    assert ncu.aggregate([]) == {}


def test_top_kernels_group_launches_by_name() -> None:
    rows = [_kernel("k", 1000.0, {DRAM: 10.0}), _kernel("big", 6000.0, {DRAM: 90.0}),
            _kernel("k", 3000.0, {DRAM: 50.0})]
    top = ncu.top_kernels(rows)
    assert [k["name"] for k in top] == ["big", "k"]
    assert top[1]["ms"] == pytest.approx(0.004) and top[1]["share"] == pytest.approx(0.4) and top[1]["count"] == 2
    assert top[1]["dram_throughput_fraction"] == pytest.approx((1000 * 0.1 + 3000 * 0.5) / 4000)
    assert "sm_throughput_fraction" not in top[1]
    assert len(ncu.top_kernels([_kernel(f"k{i}", float(i + 1), {}) for i in range(20)])) == 12


# ---- the request --------------------------------------------------------------------------------


def test_the_request_defaults_to_the_torch_profiler() -> None:
    req = parse_request({"op": "ceilings"})
    assert (req.profiler, req.ncu_launch_count, req.ncu_timeout_s) == ("torch", 40, 180.0)
    req = parse_request({"op": "ceilings", "profiler": "ncu", "ncu_launch_count": 5, "ncu_timeout_s": 30})
    assert (req.profiler, req.ncu_launch_count, req.ncu_timeout_s) == ("ncu", 5, 30.0)
    assert list(PROFILERS) == definition("request")["properties"]["profiler"]["enum"]


@pytest.mark.parametrize("bad,message", [
    ({"profiler": "nsys"}, "unknown profiler 'nsys'"),
    ({"profiler": 1}, "'profiler' must be str"),
    ({"ncu_launch_count": 0}, "'ncu_launch_count' must be >= 1"),
    ({"ncu_launch_count": True}, "'ncu_launch_count' must be int"),
    ({"ncu_launch_count": 2.5}, "'ncu_launch_count' must be int"),
    ({"ncu_timeout_s": 0.5}, "'ncu_timeout_s' must be >= 1"),
    ({"ncu_timeout_s": "60"}, "'ncu_timeout_s' must be float"),
])
def test_bad_profiler_fields_are_refused_by_parser_and_schema(bad: Dict[str, Any], message: str) -> None:
    with pytest.raises(RequestError, match=message):
        parse_request({"op": "ceilings", **bad})
    assert request_errors({"op": "ceilings", **bad})


# ---- the command --------------------------------------------------------------------------------


def test_the_command_profiles_the_nvtx_range_with_a_launch_limit() -> None:
    cmd = ncu.build_command("/opt/ncu", ncu.METRICS, 7, "/tmp/x/ncu.csv", "/tmp/x/spec.json", python="/py")
    assert cmd[0] == "/opt/ncu"
    text = " ".join(cmd)
    for flags in ("--csv --page raw --print-units base", "--nvtx --nvtx-include mblast_profile/",
                  "--launch-count 7", "--replay-mode kernel", "--cache-control all", "--clock-control none",
                  "--log-file /tmp/x/ncu.csv"):
        assert flags in text, flags
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(ncu.METRICS)
    assert cmd[-4:] == ["/py", "-m", "mblast_worker.ncu_target", "/tmp/x/spec.json"]


def test_the_child_env_has_a_tmpdir_and_the_package_on_its_path() -> None:
    env = ncu.child_env("/tmp/here", {"PYTHONPATH": "/other", "MBLAST_CACHE_FD": "5", "KEEP": "1"})
    assert env["TMPDIR"] == "/tmp/here" and env["KEEP"] == "1" and "MBLAST_CACHE_FD" not in env
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT / "worker"), "/other"]


def test_ncu_is_found_through_mblast_ncu_or_path(tmp_path: Path) -> None:
    assert ncu.find_ncu({"MBLAST_NCU": FAKE_NCU, "PATH": ""}) == FAKE_NCU
    assert ncu.find_ncu({"MBLAST_NCU": str(tmp_path / "absent"), "PATH": os.path.dirname(FAKE_NCU)}) is None
    assert ncu.find_ncu({"PATH": os.path.dirname(FAKE_NCU)}) == FAKE_NCU


def test_unknown_metrics_are_recognised_in_ncus_messages() -> None:
    text = f"==ERROR== Failed to find metric {TENSOR}.\n==PROF== {DRAM} is fine\n"
    assert ncu.unknown_metrics(text, ncu.METRICS) == [TENSOR]
    assert ncu.unknown_metrics('==ERROR== Unknown metric "dram__bytes_read"', ncu.METRICS) == [ncu.DRAM_READ]


# ---- the runner, with the fake ncu --------------------------------------------------------------


def _spec(candidate: str = "correct_relu") -> TargetSpec:
    return TargetSpec(problem=problem("relu_small"), candidate=cpu_candidate(candidate), device="cpu",
                      init_seed=42, seed=1, allow_tf32=False, tolerance_policy="eager-widened", grad=False)


def _fake_env(tmp_path: Path, **fake: str) -> Dict[str, str]:
    env = worker_env()
    env["FAKE_NCU_CALLS"] = str(tmp_path / "calls.txt")
    env["FAKE_NCU_PIDS"] = str(tmp_path / "pids.txt")
    env.update({f"FAKE_NCU_{k.upper()}": v for k, v in fake.items()})
    return env


def _calls(tmp_path: Path) -> List[List[str]]:
    path = tmp_path / "calls.txt"
    return [line.split(",") for line in path.read_text().splitlines()] if path.exists() else []


def test_the_runner_parses_what_ncu_wrote_after_the_target_ran(tmp_path: Path) -> None:
    outcome = ncu.profile(FAKE_NCU, _spec(), 40, 120.0, env=_fake_env(tmp_path))
    assert outcome.status == "ok", outcome.reason
    keys = ncu.signature_keys(outcome, 40)
    report = keys["ncu"]
    assert keys["profiler"] == "ncu"
    assert report["status"] == "ok" and report["reason"] == "" and report["kernels_profiled"] == 2
    assert report["launch_limit"] == 40 and report["wall_s"] > 0
    assert TENSOR in report["metrics_missing"] and DRAM not in report["metrics_missing"]
    assert [k["name"] for k in report["kernels"]] == ["void gemm_kernel<float, 128>(const float *, float *, int)",
                                                      "elementwise_kernel"]
    assert report["kernels"][0]["share"] == pytest.approx(0.75)
    assert "dram_throughput_fraction" not in keys  # apart from the PyTorch profiler's numbers
    metrics = report["metrics"]
    assert metrics["ncu_kernel_count"] == 2.0 and metrics["ncu_busy_ms"] == pytest.approx(0.004)
    assert metrics["dram_throughput_fraction"] == pytest.approx(0.35)
    assert metrics["tensor_pipe_fraction"] == pytest.approx(0.45)
    assert metrics["achieved_occupancy"] == pytest.approx(0.6)
    assert metrics["global_load_efficiency"] == pytest.approx(0.875)
    assert metrics["branch_efficiency"] == pytest.approx(1.0)
    assert metrics["dram_bytes"] == 2359296.0 and metrics["local_memory_bytes"] == 16 * 32
    assert metrics["stall_memory_fraction"] == pytest.approx(0.375)
    assert metrics["stall_sync_fraction"] == pytest.approx(0.075)
    assert len(_calls(tmp_path)) == 1


def test_a_target_that_fails_makes_the_run_fail_with_its_line(tmp_path: Path) -> None:
    outcome = ncu.profile(FAKE_NCU, _spec("raises"), 40, 120.0, env=_fake_env(tmp_path))
    assert outcome.status == "failed" and not outcome.rows
    assert outcome.reason.startswith("ncu_target: RuntimeError: kernel launch failed"), outcome.reason


def test_an_unknown_metric_is_dropped_for_exactly_one_retry(tmp_path: Path) -> None:
    env = _fake_env(tmp_path, mode="unknown", unknown=TENSOR, run_target="0")
    outcome = ncu.profile(FAKE_NCU, _spec(), 40, 120.0, env=env)
    assert outcome.status == "ok", outcome.reason
    calls = _calls(tmp_path)
    assert len(calls) == 2 and TENSOR in calls[0] and TENSOR not in calls[1]
    assert set(calls[0]) - set(calls[1]) == {TENSOR}
    assert outcome.dropped == [TENSOR]
    assert TENSOR in ncu.signature_keys(outcome, 40)["ncu"]["metrics_missing"]


def test_an_ncu_naming_a_new_unknown_metric_each_time_runs_twice(tmp_path: Path) -> None:
    outcome = ncu.profile(FAKE_NCU, _spec(), 40, 120.0, env=_fake_env(tmp_path, mode="unknown_each"))
    assert outcome.status == "failed" and "Failed to find metric" in outcome.reason
    calls = _calls(tmp_path)
    assert len(calls) == 2 and outcome.dropped == [ncu.METRICS[0]] and calls[1] == list(ncu.METRICS[1:])


def test_a_permission_error_is_not_retried_and_is_the_reason(tmp_path: Path) -> None:
    outcome = ncu.profile(FAKE_NCU, _spec(), 40, 120.0, env=_fake_env(tmp_path, mode="perm"))
    assert outcome.status == "failed" and "ERR_NVGPUCTRPERM" in outcome.reason
    assert len(_calls(tmp_path)) == 1 and outcome.dropped == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_an_ncu_past_its_time_limit_is_killed_with_its_children(tmp_path: Path) -> None:
    env = _fake_env(tmp_path, mode="sleep", sleep="60")
    outcome = ncu.profile(FAKE_NCU, _spec(), 40, 3.0, env=env)
    assert outcome.status == "failed" and outcome.reason == "timeout after 3 s"
    assert outcome.wall_s < 30
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    assert len(pids) == 2  # the fake and its sleeping child
    assert not os.path.exists(f"/proc/{pids[0]}")  # the fake itself: killed and reaped, no zombie
    deadline = time.monotonic() + 10.0  # SIGKILL is delivered asynchronously; give a loaded host time
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def test_no_kernel_rows_is_a_failure_with_ncus_warning(tmp_path: Path) -> None:
    outcome = ncu.profile(FAKE_NCU, _spec(), 40, 120.0, env=_fake_env(tmp_path, mode="no_kernels", run_target="0"))
    assert outcome.status == "failed" and "No kernels were profiled" in outcome.reason
    keys = ncu.signature_keys(outcome, 40)
    assert keys["ncu"]["kernels"] == [] and "metrics" not in keys["ncu"]


def test_candidate_keys_say_why_ncu_was_not_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys = ncu.candidate_keys(_spec(), torch.device("cpu"), 40, 60.0)
    assert keys == {"profiler": "ncu", "ncu": {"status": "unavailable", "reason": ncu.NOT_CUDA, "wall_s": 0.0,
                                               "launch_limit": 40, "kernels_profiled": 0, "metrics_missing": [],
                                               "kernels": []}}
    monkeypatch.setenv("MBLAST_NCU", str(tmp_path / "absent"))
    keys = ncu.candidate_keys(_spec(), torch.device("cuda"), 40, 60.0)
    assert keys["ncu"]["status"] == "unavailable" and keys["ncu"]["reason"].startswith(ncu.NOT_FOUND)


def test_candidate_keys_run_the_ncu_mblast_ncu_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MBLAST_NCU", FAKE_NCU)
    monkeypatch.setenv("FAKE_NCU_CALLS", str(tmp_path / "calls.txt"))
    # A CUDA device as far as the parent is concerned; the target builds on the spec's CPU.
    keys = ncu.candidate_keys(_spec(), torch.device("cuda"), 40, 120.0)
    assert keys["ncu"]["status"] == "ok", keys["ncu"]["reason"]
    assert keys["ncu"]["metrics"]["dram_throughput_fraction"] == pytest.approx(0.35)
    assert "dram_throughput_fraction" not in keys  # apart from the PyTorch profiler's numbers


# ---- the target ---------------------------------------------------------------------------------


def _run_target(spec: TargetSpec, tmp_path: Path) -> "subprocess.CompletedProcess[str]":
    path = tmp_path / "spec.json"
    spec.write(str(path))
    return subprocess.run([sys.executable, "-m", "mblast_worker.ncu_target", str(path)], capture_output=True,
                          text=True, timeout=120, env=worker_env())


def test_the_target_runs_the_candidates_forward(tmp_path: Path) -> None:
    done = _run_target(_spec(), tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("candidate,cause", [("raises", "kernel launch failed"), ("no_modelnew", "ModelNew")])
def test_a_failing_target_exits_1_with_one_line(tmp_path: Path, candidate: str, cause: str) -> None:
    done = _run_target(_spec(candidate), tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncu_target: ") and cause in lines[0], done.stderr


# ---- the worker, on the CPU ---------------------------------------------------------------------


def test_on_the_cpu_ncu_is_unavailable_and_the_torch_signature_stays(tmp_path: Path) -> None:
    base = eval_request(problem("matmul_small"), problem("matmul_small"), device="cpu", profile=True)
    responses = evaluate_many({"torch": base, "ncu": {**base, "profiler": "ncu"}}, tmp_path)
    plain, with_ncu = responses["torch"], responses["ncu"]
    assert with_ncu["correct"] is True and with_ncu["ok"] is True, with_ncu["error"]
    sig = with_ncu["signature"]
    assert sig["profiler"] == "ncu"
    assert sig["ncu"]["status"] == "unavailable" and sig["ncu"]["reason"] == ncu.NOT_CUDA
    assert set(sig) - {"profiler", "ncu"} == set(plain["signature"])
    assert sig["total_ms"] > 0 and sig["kernel_count"] >= 1
    assert any(op["name"] in ("aten::mm", "aten::matmul") for op in sig["ops"])
    assert "ncu" not in with_ncu["reference_signature"] and "profiler" not in with_ncu["reference_signature"]
    assert any(note.startswith("ncu unavailable") for note in with_ncu["notes"])
