"""The request a worker executes, parsed and validated from JSON."""

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import RequestError

OPS = ("eval", "check_task", "ceilings")
POLICIES = ("eager-widened", "strict")
BASELINES = ("eager", "compile")
PROFILERS = ("torch", "ncu")


@dataclass
class TimingConfig:
    runs: int = 30
    warmup: int = 5
    input_sets: int = 3
    l2_flush: bool = True
    # Timed calls record autograd as a plain call does, and as KernelBench's harness times them
    # (its timing runs outside torch.no_grad()); every other call of the candidate runs in the
    # same mode (Session.candidate_grad), so that a compiled candidate compiles one graph.
    autograd: bool = True


@dataclass
class DeviceCeilings:
    bandwidth_gbs: float
    peak_tflops: float  # fp32, TF32 off
    peak_tflops_tf32: Optional[float] = None  # fp32 with TF32 on (CUDA)
    peak_tflops_bf16: Optional[float] = None  # CUDA
    peak_tflops_fp16: Optional[float] = None


@dataclass
class Request:
    op: str
    problem: Optional[str] = None
    candidate: Optional[str] = None
    device: str = "cpu"
    seeds: List[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    init_seed: int = 42
    atol: float = 1e-4
    rtol: float = 1e-4
    tolerance_policy: str = "eager-widened"
    timing: Optional[TimingConfig] = field(default_factory=TimingConfig)
    baselines: List[str] = field(default_factory=lambda: ["eager"])
    cache_dir: Optional[str] = None
    allow_tf32: bool = False
    device_ceilings: Optional[DeviceCeilings] = None
    # Optional soft limit (SIGALRM): only interrupts Python code; the driver's kill is the hard one.
    timeout_s: Optional[float] = None
    # Profile candidate and reference after timing: the signatures the state classifier reads.
    profile: bool = False
    # With profile: the reference's signature too (optimize needs it of the reference's own
    # evaluation only, so it asks for it nowhere else: a long forward's profile costs seconds).
    profile_reference: bool = True
    # "ncu": the candidate's signature also gets Nsight Compute metrics (ncu.py), from a child process.
    profiler: str = "torch"
    ncu_launch_count: int = 40  # kernels ncu profiles at most
    ncu_timeout_s: float = 180.0  # the whole ncu step, its one retry included
    # eval: after the candidate's first call, report "held" and wait for the driver's "go" line
    # (progress.hold): the driver's prebuild compiles a candidate before it is chosen.
    hold: bool = False
    # eval: more problems (absolute paths) the candidate is judged on after `problem`, in this
    # process, in order, stopping at the first it fails (workloads.py): a SOL-ExecBench problem's
    # other workloads.
    workloads: List[str] = field(default_factory=list)


def _typed(raw: Dict[str, Any], key: str, kinds: tuple, default: Any) -> Any:
    value = raw.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds:
        raise RequestError(f"request field {key!r} must be {kinds[0].__name__}, got bool")
    if not isinstance(value, kinds):
        raise RequestError(f"request field {key!r} must be {kinds[0].__name__}, got {type(value).__name__}")
    return value


def _abs_path(raw: Dict[str, Any], key: str, required: bool) -> Optional[str]:
    value = _typed(raw, key, (str,), None)
    if value is None:
        if required:
            raise RequestError(f"request field {key!r} is required")
        return None
    if not os.path.isabs(value):
        raise RequestError(f"request field {key!r} must be an absolute path, got {value!r}")
    return value


def _optional_float(raw: Dict[str, Any], key: str) -> Optional[float]:
    value = _typed(raw, key, (float, int), None)
    return float(value) if value is not None else None


def parse_timing(raw: Any) -> Optional[TimingConfig]:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RequestError("request field 'timing' must be an object or null")
    cfg = TimingConfig(
        runs=int(_typed(raw, "runs", (int,), 30)),
        warmup=int(_typed(raw, "warmup", (int,), 5)),
        input_sets=int(_typed(raw, "input_sets", (int,), 3)),
        l2_flush=bool(_typed(raw, "l2_flush", (bool,), True)),
        autograd=bool(_typed(raw, "autograd", (bool,), True)),
    )
    if cfg.runs < 1 or cfg.warmup < 0 or cfg.input_sets < 1:
        raise RequestError("timing needs runs >= 1, warmup >= 0, input_sets >= 1")
    return cfg


def parse_request(raw: Any, default_device: str = "cpu") -> Request:
    if not isinstance(raw, dict):
        raise RequestError("request must be a JSON object")
    op = _typed(raw, "op", (str,), None)
    if op not in OPS:
        raise RequestError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    req = Request(op=op)
    req.problem = _abs_path(raw, "problem", required=op in ("eval", "check_task"))
    req.candidate = _abs_path(raw, "candidate", required=op == "eval")
    req.hold = _typed(raw, "hold", (bool,), False)
    req.workloads = _workloads(raw, op)
    if req.hold and op != "eval":
        raise RequestError("request field 'hold' is for op 'eval' only")
    req.device = _typed(raw, "device", (str,), default_device)
    seeds = _typed(raw, "seeds", (list,), [1, 2, 3, 4, 5])
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise RequestError("request field 'seeds' must be a non-empty list of integers")
    req.seeds = list(seeds)
    req.init_seed = int(_typed(raw, "init_seed", (int,), 42))
    req.atol = float(_typed(raw, "atol", (float, int), 1e-4))
    req.rtol = float(_typed(raw, "rtol", (float, int), 1e-4))
    req.tolerance_policy = _typed(raw, "tolerance_policy", (str,), "eager-widened")
    if req.tolerance_policy not in POLICIES:
        raise RequestError(f"unknown tolerance_policy {req.tolerance_policy!r}")
    req.timing = parse_timing(raw["timing"]) if "timing" in raw else TimingConfig()
    baselines = _typed(raw, "baselines", (list,), ["eager"])
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise RequestError(f"unknown baselines {unknown}")
    req.baselines = list(baselines)
    req.cache_dir = _abs_path(raw, "cache_dir", required=False)
    req.allow_tf32 = bool(_typed(raw, "allow_tf32", (bool,), False))
    req.profile = bool(_typed(raw, "profile", (bool,), False))
    req.profile_reference = bool(_typed(raw, "profile_reference", (bool,), True))
    _parse_profiler(raw, req)
    ceilings = raw.get("device_ceilings")
    if ceilings is not None:
        if not isinstance(ceilings, dict):
            raise RequestError("request field 'device_ceilings' must be an object")
        req.device_ceilings = DeviceCeilings(
            bandwidth_gbs=float(_typed(ceilings, "bandwidth_gbs", (float, int), 0.0)),
            peak_tflops=float(_typed(ceilings, "peak_tflops", (float, int), 0.0)),
            peak_tflops_tf32=_optional_float(ceilings, "peak_tflops_tf32"),
            peak_tflops_bf16=_optional_float(ceilings, "peak_tflops_bf16"),
            peak_tflops_fp16=_optional_float(ceilings, "peak_tflops_fp16"),
        )
    timeout = _typed(raw, "timeout_s", (float, int), None)
    req.timeout_s = float(timeout) if timeout is not None else None
    return req


def _workloads(raw: Dict[str, Any], op: str) -> List[str]:
    workloads = _typed(raw, "workloads", (list,), [])
    if workloads and op != "eval":
        raise RequestError("request field 'workloads' is for op 'eval' only")
    if not all(isinstance(w, str) and os.path.isabs(w) for w in workloads):
        raise RequestError("request field 'workloads' must be a list of absolute paths")
    return list(workloads)


def _parse_profiler(raw: Dict[str, Any], req: Request) -> None:
    req.profiler = _typed(raw, "profiler", (str,), "torch")
    if req.profiler not in PROFILERS:
        raise RequestError(f"unknown profiler {req.profiler!r}; expected one of {', '.join(PROFILERS)}")
    req.ncu_launch_count = int(_typed(raw, "ncu_launch_count", (int,), 40))
    if req.ncu_launch_count < 1:
        raise RequestError(f"request field 'ncu_launch_count' must be >= 1, got {req.ncu_launch_count}")
    req.ncu_timeout_s = float(_typed(raw, "ncu_timeout_s", (float, int), 180.0))
    if not req.ncu_timeout_s >= 1.0:  # also refuses NaN
        raise RequestError(f"request field 'ncu_timeout_s' must be >= 1 second, got {req.ncu_timeout_s}")
