"""Tensor bundles for the native backends (OpenCL, RVV): a problem's inputs, parameters and
expected outputs per seed, made on the CPU. The file format is documented in
include/mblast/bundle.hpp; `meta.json` beside the files describes them and carries PyTorch's own
fp32 error against the float64 reference and the tolerance floor the precision policy derives from
it (compare.widen_floor),
the PyTorch CPU time of the reference (the OpenCL baseline) and the work of one forward
(`work`: minimal bytes and FLOPs, which the native signatures set against the measured time)
and, when the forward is one matrix product of the bundle's tensors, its shape (`gemm`, see
mblast_worker.gemm; null with `gemm_reason` otherwise), for a tuned BLAS library's baseline.
With --shrink N the bundles are made from the problem at reduced sizes (mblast_bundle.shrink):
the shrunken source is written beside them as problem.py and meta.json's "shrink" says what
changed.

    python3 -m mblast_bundle PROBLEM.py OUT_DIR [--seeds 5] [--seed 1] [--runs 30] [--shrink N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import time
from typing import Any, BinaryIO, Dict, List, Tuple

import torch

from mblast_worker.compare import eager_error, widen_floor
from mblast_worker.costmodel import min_bytes
from mblast_worker.flops import count_dispatch_flops
from mblast_worker.errors import TaskError, WorkerError
from mblast_worker.gemm import gemm_shape
from mblast_worker.loader import call_input_fn, construct, describe, load_problem
from mblast_worker.outputs import kind_error, output_list
from mblast_worker.session import seed_everything
from .shrink import shrink_file

MAGIC = b"MBTBNDL1"
ROLE_INPUT, ROLE_PARAMETER, ROLE_EXPECTED = 0, 1, 2
_DTYPES: Dict[torch.dtype, int] = {torch.float32: 0, torch.float64: 1, torch.int32: 2, torch.int64: 3,
                                   torch.bool: 4, torch.uint8: 4}


def _write_tensor(out: BinaryIO, role: int, name: str, t: torch.Tensor) -> None:
    if t.dtype not in _DTYPES:
        raise TaskError(f"{name} has dtype {t.dtype}; native backends take float32, float64, int32, int64 or bool")
    data = t.detach().contiguous().cpu()
    if data.dtype == torch.bool:
        data = data.to(torch.uint8)
    raw = data.numpy().tobytes() if data.numel() else b""
    encoded = name.encode("utf-8")
    out.write(struct.pack("<BBH", role, _DTYPES[t.dtype], len(encoded)))
    out.write(encoded)
    out.write(struct.pack("<I", data.dim()))
    out.write(struct.pack(f"<{data.dim()}q", *data.shape))
    out.write(struct.pack("<Q", len(raw)))
    out.write(b"\0" * (-out.tell() % 8))
    out.write(raw)


def _describe(name: str, t: torch.Tensor) -> Dict[str, Any]:
    return {"name": name, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}


def _as_tensor(value: Any, name: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value)
    raise TaskError(f"{name} is a {type(value).__name__}; native backends take tensors and numbers")


def _errors(eager: List[torch.Tensor], ref: List[torch.Tensor]) -> Tuple[float, float, float]:
    """max |e - r|, max |e - r| / |r|, and eager_error(): the one number the tolerance policy
    widens both atol and rtol by, for every backend (compare.widened)."""
    max_abs = max_rel = policy = 0.0
    for e, r in zip(eager, ref):
        diff = (e.double() - r).abs()
        if diff.numel():
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / r.abs().clamp_min(1e-12)).max()))
            policy = max(policy, eager_error(e, r))
    return max_abs, max_rel, policy


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _time_at(model: torch.nn.Module, inputs: List[Any], runs: int) -> Dict[str, Any]:
    model(*inputs)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model(*inputs)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return {"median_ms": statistics.median(times), "p10_ms": times[len(times) // 10],
            "p90_ms": times[(len(times) * 9) // 10], "runs": runs}


def _time_torch(model: torch.nn.Module, inputs: List[Any], runs: int) -> Tuple[Dict[str, Any], int]:
    """PyTorch's CPU time as a user would get it at its best: with its default thread count (one
    per physical core) and with one per CPU this process may use (what an OpenCL CPU device such
    as PoCL runs on), the faster of the two, and the thread count it used."""
    default = torch.get_num_threads()
    best, threads = _time_at(model, inputs, runs), default
    usable = _usable_cpus()
    if usable != default:
        torch.set_num_threads(usable)
        try:
            wide = _time_at(model, inputs, runs)
        finally:
            torch.set_num_threads(default)
        if wide["median_ms"] < best["median_ms"]:
            best, threads = wide, usable
    return best, threads


def _work(model: torch.nn.Module, inputs: List[Any], eager: List[torch.Tensor]) -> Dict[str, Any]:
    """What one forward must do at least, for the native signatures' speed of light: every input,
    parameter and output moved once, and its FLOPs counted over the aten ops (flops.py)."""
    return {"min_bytes": min_bytes(inputs, model, eager),
            "flops": count_dispatch_flops(lambda: model(*[x.clone() for x in inputs])),
            "flop_rules": "mblast_worker.flops"}


def make_bundles(problem_path: str, out_dir: str, seeds: int, first_seed: int, runs: int,
                 shrink: int = 0) -> Dict[str, Any]:
    torch.set_grad_enabled(False)
    os.makedirs(out_dir, exist_ok=True)
    meta: Dict[str, Any] = {"problem": os.path.abspath(problem_path), "seeds": [], "torch_version": torch.__version__,
                            "threads": torch.get_num_threads()}
    if shrink > 0:
        reduced = shrink_file(problem_path, shrink, first_seed)
        shrunk_path = os.path.join(out_dir, "problem.py")
        with open(shrunk_path, "w", encoding="utf-8") as f:
            f.write(reduced.source)
        meta["shrink"] = dict(reduced.report(), problem_file="problem.py")
        problem = load_problem(shrunk_path)
    else:
        problem = load_problem(problem_path)
    worst_abs = worst_rel = worst_policy = 0.0
    timing_inputs: List[Any] = []
    model32 = None
    for seed in range(first_seed, first_seed + seeds):
        init_inputs = call_input_fn(problem, "get_init_inputs")
        model = construct(problem.model_cls, init_inputs, seed, torch.device("cpu"), problem_path, TaskError)
        model.eval()
        seed_everything(seed)
        inputs = [_as_tensor(v, f"input{i}") for i, v in enumerate(call_input_fn(problem, "get_inputs"))]
        try:
            eager_value = model(*[x.clone() for x in inputs])
            model64 = construct(problem.model_cls, init_inputs, seed, torch.device("cpu"), problem_path, TaskError)
            model64.load_state_dict(model.state_dict())
            model64 = model64.double()
            ref_value = model64(*[x.double() if x.is_floating_point() else x for x in inputs])
        except WorkerError:
            raise
        except Exception as exc:  # the problem's own forward failed
            raise TaskError(f"{problem_path}: forward raised {describe(exc)}") from None
        eager, ref = output_list(eager_value), output_list(ref_value)
        if eager is None or ref is None or not all(isinstance(t, torch.Tensor) for t in eager + ref):
            raise TaskError(f"{problem_path}: {kind_error(eager_value)}")
        abs_err, rel_err, policy_err = _errors(eager, ref)
        worst_abs, worst_rel = max(worst_abs, abs_err), max(worst_rel, rel_err)
        worst_policy = max(worst_policy, policy_err)
        params = [(name, t) for name, t in model.state_dict().items()]
        name = f"seed-{seed}.mbtb"
        with open(os.path.join(out_dir, name + ".tmp"), "wb") as out:
            out.write(MAGIC)
            out.write(struct.pack("<I", len(inputs) + len(params) + len(ref)))
            for i, x in enumerate(inputs):
                _write_tensor(out, ROLE_INPUT, f"input{i}", x)
            for pname, t in params:
                _write_tensor(out, ROLE_PARAMETER, pname, t)
            for i, r in enumerate(ref):
                _write_tensor(out, ROLE_EXPECTED, f"output{i}", r.double())
        os.replace(os.path.join(out_dir, name + ".tmp"), os.path.join(out_dir, name))
        meta["seeds"].append({"seed": seed, "file": name})
        if seed == first_seed:
            meta["inputs"] = [_describe(f"input{i}", x) for i, x in enumerate(inputs)]
            meta["parameters"] = [_describe(n, t) for n, t in params]
            meta["outputs"] = [_describe(f"output{i}", e) for i, e in enumerate(eager)]
            timing_inputs, model32 = inputs, model
            meta["work"] = _work(model, inputs, eager)
            meta["gemm"], reason = gemm_shape(model, inputs, params)
            if reason:
                meta["gemm_reason"] = reason
    meta["eager"] = {"max_abs_err": worst_abs, "max_rel_err": worst_rel, "policy_err": worst_policy,
                     "widen_floor": widen_floor(worst_policy)}
    if model32 is not None and runs > 0:
        meta["torch_cpu_ms"], meta["threads"] = _time_torch(model32, timing_inputs, runs)
    with open(os.path.join(out_dir, "meta.json.tmp"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    os.replace(os.path.join(out_dir, "meta.json.tmp"), os.path.join(out_dir, "meta.json"))
    return meta


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mblast_bundle", description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("out_dir")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=30, help="timed runs of the reference on the CPU")
    parser.add_argument("--shrink", type=int, default=0, metavar="N",
                        help="make them at reduced sizes: at most N elements of inputs, parameters and outputs")
    args = parser.parse_args(argv)
    try:
        make_bundles(args.problem, args.out_dir, args.seeds, args.seed, args.runs, args.shrink)
    except WorkerError as exc:
        print(f"mblast_bundle: {exc.message}", file=sys.stderr)
        return 2
    return 0

