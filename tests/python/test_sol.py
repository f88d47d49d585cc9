"""SOL-ExecBench problems (worker/mblast_sol): formats and their errors, axes, inputs, the problem
files the judge takes, solutions as candidates, and the workload tolerance in the judge."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch

from conftest import PROBLEMS, ROOT, brief, eval_request, evaluate, worker_env
from mblast_sol.axes import check_constraints, evaluate as evaluate_expression, resolve
from mblast_sol.formats import FormatError, load_problem_dir, parse_definition, parse_workload
from mblast_sol.inputs import WorkloadInputs, random_tensor
from mblast_sol.problem_file import write_problem_files
from mblast_sol.safetensors import read_tensor, write_tensors
from mblast_sol.solution import UnsupportedSolution, candidate_source, parse_solution
from mblast_worker.compare import Tol, diff, widened
from mblast_worker.costmodel import compute_dtype, sol_ms, sol_score
from mblast_worker.request import DeviceCeilings
from mblast_worker.loader import load_candidate, load_problem

SMALL = PROBLEMS / "sol" / "rmsnorm_small"
EXAMPLES = ROOT.parent / "shared" / "sol_execbench" / "examples"


def definition() -> Dict[str, Any]:
    return json.loads((SMALL / "definition.json").read_text())


def write_problem(tmp_path: Path, d: Dict[str, Any], workloads: List[Dict[str, Any]]) -> Path:
    folder = tmp_path / "problem"
    folder.mkdir(exist_ok=True)
    (folder / "definition.json").write_text(json.dumps(d))
    (folder / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in workloads))
    return folder


def sol_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mblast_sol", *args], capture_output=True, text=True,
                          env=worker_env(), timeout=120)


# ---- formats -------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, where", [
    (lambda d: d["inputs"]["x"].update(dtype="bf16"), "definition.json.inputs.x.dtype"),
    (lambda d: d["inputs"]["x"].update(shape=["batch_size", "width"]), "definition.json.inputs.x.shape[1]"),
    (lambda d: d["axes"]["hidden"].update(value="64"), "definition.json.axes.hidden.value"),
    (lambda d: d.update(reference="def forward(x):\n    return x\n"), "definition.json.reference"),
    (lambda d: d.update(custom_inputs_entrypoint="make"), "definition.json.custom_inputs_entrypoint"),
    (lambda d: d["outputs"].update({"not a name": {"shape": [], "dtype": "float32"}}),
     "definition.json.outputs.not a name"),
])
def test_a_bad_definition_names_its_field(change: Any, where: str) -> None:
    d = definition()
    change(d)
    with pytest.raises(FormatError) as err:
        parse_definition(d)
    assert err.value.where == where, str(err.value)


@pytest.mark.parametrize("workload, where", [
    ({"uuid": "a", "axes": {}}, "w.axes"),
    ({"uuid": "a", "axes": {"batch_size": 2, "hidden": 3}}, "w.axes.hidden"),
    ({"uuid": "a", "axes": {"batch_size": 2}, "inputs": {"y": {"type": "random"}}}, "w.inputs"),
    ({"uuid": "a", "axes": {"batch_size": 2}, "inputs": {"x": {"type": "scalar", "value": 1}}}, "w.inputs.x"),
    ({"uuid": "a", "axes": {"batch_size": 2}, "inputs": {"x": {"type": "custom"}}}, "w.inputs.x"),
    ({"uuid": "a", "axes": {"batch_size": 2}, "tolerance": {"required_matched_ratio": 1.5}},
     "w.tolerance.required_matched_ratio"),
    ({"uuid": "a", "axes": {"batch_size": 2}, "tolerance": {"max_atoll": 1}}, "w.tolerance"),
])
def test_a_bad_workload_names_its_field(workload: Dict[str, Any], where: str) -> None:
    with pytest.raises(FormatError) as err:
        parse_workload(workload, parse_definition(definition()), "w")
    assert err.value.where == where, str(err.value)


def test_a_repeated_uuid_and_an_empty_workload_file_are_refused(tmp_path: Path) -> None:
    w = {"uuid": "same", "axes": {"batch_size": 1}}
    with pytest.raises(FormatError, match="repeats 'same' of line 1"):
        load_problem_dir(str(write_problem(tmp_path, definition(), [w, w])))
    with pytest.raises(FormatError, match="holds no workload"):
        load_problem_dir(str(write_problem(tmp_path, definition(), [])))


def test_missing_inputs_are_random_and_defaults_follow_the_format() -> None:
    w = parse_workload({"uuid": "a", "axes": {"batch_size": 2}}, parse_definition(definition()), "w")
    assert {n: s.kind for n, s in w.inputs.items()} == {"x": "random", "weight": "random", "eps": "random"}
    assert (w.tolerance.max_atol, w.tolerance.max_rtol, w.tolerance.required_matched_ratio) == (1e-2, 1e-2, 0.99)


# ---- axes ----------------------------------------------------------------------------------------


def test_axis_expressions_and_constraints() -> None:
    d = parse_definition(definition())
    assert resolve(d.axes, {"batch_size": 3}, "w") == {"batch_size": 3, "hidden": 64, "half": 32}
    assert evaluate_expression("(a + 1) ** 2 // 3 - -a % 4", {"a": 5}, "e") == 36 // 3 - (-5 % 4)
    with pytest.raises(FormatError, match="does not hold"):
        check_constraints(["half * 3 == hidden"], {"half": 32, "hidden": 64}, "w")
    for bad in ("__import__('os')", "a.b", "a if a else 1", "7 / 2"):
        with pytest.raises(FormatError):
            evaluate_expression(bad, {"a": 1}, "e")


# ---- inputs --------------------------------------------------------------------------------------


def test_random_values_follow_the_dtype_rules() -> None:
    torch.manual_seed(0)
    ints = random_tensor([4096], "int32", torch.device("cpu"))
    assert ints.dtype == torch.int32 and -1024 <= int(ints.min()) and int(ints.max()) < 1024
    int8 = random_tensor([4096], "int8", torch.device("cpu"))
    assert int(int8.min()) < -100 and int(int8.max()) > 100
    flags = random_tensor([64], "bool", torch.device("cpu"))
    assert flags.dtype == torch.bool and 0 < int(flags.sum()) < 64
    assert random_tensor([3, 2], "bfloat16", torch.device("cpu")).dtype == torch.bfloat16
    if hasattr(torch, "float8_e4m3fn"):
        f8 = random_tensor([4096], "float8_e4m3fn", torch.device("cpu")).float()
        assert f8.abs().max() <= 2.0


def test_scalar_custom_and_safetensors_inputs(tmp_path: Path) -> None:
    d = definition()
    d["reference"] = ("import torch\n\ndef make(axes, device):\n    n = axes['batch_size']\n"
                      "    return {'weight': torch.full((axes['hidden'],), float(n), device=device)}\n\n"
                      "def run(x, weight, eps):\n    return x, x.float().sum(-1)\n")
    d["custom_inputs_entrypoint"] = "make"
    stored = torch.arange(3 * 64, dtype=torch.float32).reshape(3, 64).to(torch.bfloat16)
    folder = write_problem(tmp_path, d, [{"uuid": "a", "axes": {"batch_size": 3}, "inputs": {
        "x": {"type": "safetensors", "path": "blobs/x.safetensors", "tensor_key": "x"},
        "weight": {"type": "custom"}, "eps": {"type": "scalar", "value": 0.5}}}])
    (folder / "blobs").mkdir()
    write_tensors(str(folder / "blobs" / "x.safetensors"), {"x": stored, "other": torch.ones(2, dtype=torch.int64)})
    assert torch.equal(read_tensor(str(folder / "blobs" / "x.safetensors"), "x"), stored)
    problem = load_problem_dir(str(folder))
    namespace: Dict[str, Any] = {}
    exec(problem.definition.reference, namespace)  # noqa: S102 - the test's own reference
    x, weight, eps = WorkloadInputs(problem.definition, problem.workloads[0], problem.directory,
                                    namespace["make"]).make()
    assert torch.equal(x, stored) and eps == 0.5 and torch.equal(weight, torch.full((64,), 3.0))


# ---- problem files -------------------------------------------------------------------------------


def test_problem_files_are_kernelbench_problems_with_the_workload_tolerance(tmp_path: Path) -> None:
    manifest = write_problem_files(load_problem_dir(str(SMALL)), str(tmp_path / "out"))
    assert [w["uuid"] for w in manifest["workloads"]] == ["w-rows-1", "w-rows-24", "w-rows-7"]
    assert manifest["workloads"][1]["axes"] == {"batch_size": 24, "hidden": 64, "half": 32}
    problem = load_problem(manifest["workloads"][1]["file"])
    assert problem.tolerance == Tol(0.02, 0.02, 0.99, None, widen="add")
    torch.manual_seed(1)
    x, weight, eps = problem.get_inputs()
    assert x.shape == (24, 64) and x.dtype == torch.bfloat16 and weight.shape == (64,) and eps == 1e-6
    out, variance = problem.model_cls()(x, weight, eps)
    assert out.dtype == torch.bfloat16 and variance.shape == (24,)
    source = Path(manifest["workloads"][1]["file"]).read_text()
    assert "def run(x, weight, eps):" in source and "Inputs: x bfloat16[24, 64]" in source


def test_the_command_line_names_the_field_of_a_bad_problem(tmp_path: Path) -> None:
    d = definition()
    d["axes"]["half"]["expression"] = "hidden // zero"
    done = sol_cli("problem", str(write_problem(tmp_path, d, [{"uuid": "a", "axes": {"batch_size": 1}}])),
                   "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "definition.json.axes.half.expression" in done.stderr, done.stderr


# ---- solutions -----------------------------------------------------------------------------------


def solution(name: str) -> Dict[str, Any]:
    return json.loads((SMALL / f"solution_{name}.json").read_text())


def test_a_dps_solution_gets_its_outputs_allocated_from_the_input_shapes(tmp_path: Path) -> None:
    problem = load_problem_dir(str(SMALL))
    path = tmp_path / "candidate.py"
    path.write_text(candidate_source(parse_solution(solution("dps"), "s"), problem.definition,
                                     problem.raw_definition))
    model = load_candidate(str(path)).model_cls()
    x = torch.randn(5, 64).to(torch.bfloat16)
    weight = torch.randn(64).to(torch.bfloat16)
    out, variance = model(x, weight, 1e-6)
    assert out.shape == (5, 64) and out.dtype == torch.bfloat16 and variance.dtype == torch.float32
    assert torch.allclose(variance, x.float().pow(2).mean(-1))


def test_solutions_that_cannot_run_are_refused_with_the_reason() -> None:
    problem = load_problem_dir(str(SMALL))
    other_binding = solution("cuda")
    other_binding["spec"]["binding"] = "tvm-ffi"
    with pytest.raises(UnsupportedSolution, match="torch binding only"):
        parse_solution(other_binding, "s")
    mixed = solution("cuda")
    mixed["spec"]["languages"] = ["cuda_cpp", "triton"]
    with pytest.raises(FormatError, match="mixes C\\+\\+ and Python"):
        parse_solution(mixed, "s")
    other = solution("dps")
    other["definition"] = "another_problem"
    with pytest.raises(FormatError, match="another_problem"):
        candidate_source(parse_solution(other, "s"), problem.definition, problem.raw_definition)
    broken = solution("dps")
    broken["spec"]["entry_point"] = "missing.py::run"
    with pytest.raises(FormatError, match="missing.py"):
        parse_solution(broken, "s")


def _can_build_extensions() -> bool:
    from torch.utils import cpp_extension

    roots = cpp_extension.include_paths() + ["/usr/include"]
    return any(os.path.isfile(os.path.join(r, "torch", "extension.h")) for r in roots) and bool(shutil.which("ninja"))


@pytest.mark.skipif(not _can_build_extensions(), reason="torch's C++ headers or ninja are missing "
                                                        "(apt-get install libtorch-dev pybind11-dev ninja-build)")
def test_a_cpp_solution_is_built_ahead_once_and_judged_from_the_cache(tmp_path: Path, monkeypatch: Any) -> None:
    cache = tmp_path / "cuda-cache"
    candidate = str(tmp_path / "cpp.py")
    done = sol_cli("solution", str(SMALL), str(SMALL / "solution_cpp.json"), "--out", candidate,
                   "--build-cache", str(cache))
    assert done.returncode == 0 and json.loads(done.stdout)["built_ahead"] is True, done.stdout + done.stderr
    built = list((cache / "torch-ext").glob("*/mblast_sol_*.so"))
    assert len(built) == 1
    cache.chmod(0o555)  # read-only, as inside the sandbox: the worker must not build again
    monkeypatch.setenv("MBLAST_CUDA_CACHE", str(cache))
    manifest = write_problem_files(load_problem_dir(str(SMALL)), str(tmp_path / "problem"))
    try:
        for w in manifest["workloads"]:
            resp = evaluate(eval_request(w["file"], candidate, seeds=[1]), tmp_path / "requests")
            assert resp["correct"], brief(resp)
    finally:
        cache.chmod(0o755)
    assert list((cache / "torch-ext").glob("*/mblast_sol_*.so")) == built


# ---- the judge -----------------------------------------------------------------------------------


def judged(tmp_path: Path, name: str, workload: int = 0) -> Dict[str, Any]:
    manifest = write_problem_files(load_problem_dir(str(SMALL)), str(tmp_path / "problem"))
    problem_file = manifest["workloads"][workload]["file"]
    candidate = problem_file
    if name != "reference":
        candidate = str(tmp_path / f"{name}.py")
        done = sol_cli("solution", str(SMALL), str(SMALL / f"solution_{name}.json"), "--out", candidate)
        assert done.returncode == 0, done.stderr
    return evaluate(eval_request(problem_file, candidate, seeds=[1, 2]), tmp_path / "requests")


@pytest.mark.parametrize("name", ["reference", "dps", "returning"])
def test_correct_solutions_pass_on_the_workload_tolerance(tmp_path: Path, name: str) -> None:
    resp = judged(tmp_path, name, workload=1)
    assert resp["correct"], brief(resp)
    assert resp["tolerance"]["matched_ratio"] == 0.99 and resp["tolerance"]["atol"] >= 0.02, brief(resp)


def test_a_wrong_solution_fails_saying_how_many_elements_are_off(tmp_path: Path) -> None:
    resp = judged(tmp_path, "wrong")
    assert not resp["correct"] and resp["error_kind"] == "mismatch", brief(resp)
    assert "of elements are outside it, at most 1.00% may be" in resp["error"], brief(resp)


def test_matched_ratio_and_error_cap_decide_on_outliers() -> None:
    ref = torch.linspace(-1, 1, 1000, dtype=torch.float64)
    cand = ref.clone()
    cand[:5] += 0.5  # 0.5 % of the elements far off
    assert diff(cand, ref, Tol(1e-2, 1e-2, 0.99), 1e-2).passes(math.inf)
    assert not diff(cand, ref, Tol(1e-2, 1e-2, 0.996), 1e-2).passes(math.inf)
    assert not diff(cand, ref, Tol(1e-2, 1e-2), 1e-2).passes(math.inf)  # KernelBench's rule: every element
    assert not diff(cand, ref, Tol(1e-2, 1e-2, 0.99, error_cap=0.25), 1e-2).passes(math.inf)
    workload = Tol(1e-2, 1e-2, 0.99, error_cap=0.1, widen="add")
    wide = widened(workload, 1e-2, "eager-widened", eager_max_abs=0.05)
    assert (wide.atol, wide.rtol, wide.error_cap) == pytest.approx((0.0201, 0.0201, 0.15))
    assert widened(workload, 1e-2, "strict") == workload
    cand[7] = math.nan  # NaN where the reference is finite fails whatever the ratio
    assert diff(cand, ref, Tol(1e-2, 1e-2, 0.99), 1e-2).failure(math.inf) == "nan_inf"


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="SOL-ExecBench's examples are not next to the checkout")
def test_the_pytorch_examples_are_judged_at_reduced_sizes(tmp_path: Path) -> None:
    """SOL-ExecBench's two PyTorch examples with their own solutions: linear_backward at its
    workloads, gemma3_swiglu with its const axes cut from 3072 x 24576 to 96 x 192 (a CPU judges
    the full sizes too slowly for CI)."""
    for name, consts in (("linear_backward", {}), ("gemma3_swiglu", {"hidden_size": 96, "intermediate_size": 192})):
        folder = tmp_path / name
        shutil.copytree(EXAMPLES / "pytorch" / name, folder)
        d = json.loads((folder / "definition.json").read_text())
        for axis, value in consts.items():
            d["axes"][axis]["value"] = value
        (folder / "definition.json").write_text(json.dumps(d))
        manifest = write_problem_files(load_problem_dir(str(folder)), str(folder / "out"))
        candidate = str(folder / "candidate.py")
        done = sol_cli("solution", str(folder), str(folder / "solution_python.json"), "--out", candidate)
        assert done.returncode == 0, done.stderr
        for w in manifest["workloads"]:
            resp = evaluate(eval_request(w["file"], candidate, seeds=[1]), folder / "requests")
            assert resp["correct"], (name, w["uuid"], brief(resp))


def test_the_speed_of_light_takes_the_peak_of_the_problems_dtype() -> None:
    ceilings = DeviceCeilings(bandwidth_gbs=1000.0, peak_tflops=50.0, peak_tflops_tf32=400.0, peak_tflops_bf16=800.0,
                              peak_tflops_fp16=1000.0)
    flops, nbytes = 8e12, 1e6  # compute-bound at every peak
    assert sol_ms(flops, nbytes, ceilings) == pytest.approx(160.0)
    assert sol_ms(flops, nbytes, ceilings, tf32=True) == pytest.approx(20.0)
    assert sol_ms(flops, nbytes, ceilings, dtype="bfloat16") == pytest.approx(10.0)
    assert sol_ms(flops, nbytes, ceilings, dtype="float16") == pytest.approx(8.0)
    assert sol_ms(flops, nbytes, ceilings, dtype="float8_e4m3fn") == pytest.approx(10.0)
    no_half = DeviceCeilings(bandwidth_gbs=1000.0, peak_tflops=50.0)  # the CPU: no half-precision rate measured
    assert sol_ms(flops, nbytes, no_half, dtype="bfloat16") == pytest.approx(160.0)
    assert compute_dtype([torch.ones(2), torch.ones(2, dtype=torch.bfloat16)]) == "bfloat16"
    assert compute_dtype([torch.ones(2, dtype=torch.int64)]) == "float32"
    assert sol_score(2.0, 4.0, 1.0) == pytest.approx(0.75)
    assert sol_score(4.0, 4.0, 1.0) == pytest.approx(0.5)
    assert sol_score(1.0, 0.9, 1.0) is None  # eager beat the estimate: it does not hold here
