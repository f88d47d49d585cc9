"""The response: every field is always present, null where it does not apply."""

import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from .errors import WorkerError
from .phases import Phases


@dataclass
class ErrLocation:
    output: int
    index: List[int]
    cand: Optional[float]
    ref: Optional[float]


@dataclass
class Tolerance:
    atol: float
    rtol: float
    policy: str
    widened_by_eager: bool
    # Where the problem sets them (a SOL-ExecBench workload): see compare.Tol.
    matched_ratio: Optional[float] = None
    error_cap: Optional[float] = None


@dataclass
class TimingStats:
    median_ms: float
    mean_ms: float
    p10_ms: float
    p90_ms: float
    stdev_ms: float
    runs: int


@dataclass
class Trial:
    seed: int
    max_abs_err: Optional[float]
    max_rel_err: Optional[float]
    # Python keyword, so the JSON name "pass" is set in to_dict.
    passed: bool


@dataclass
class OutputSpec:
    shape: List[int]
    dtype: str


@dataclass
class Response:
    ok: bool = False
    correct: Optional[bool] = None
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    rel_l2_err: Optional[float] = None
    err_location: Optional[ErrLocation] = None
    eager_max_abs_err: Optional[float] = None
    eager_max_rel_err: Optional[float] = None
    tolerance: Optional[Tolerance] = None
    reference_precision: Optional[str] = None
    ref_ms: Optional[float] = None
    cand_ms: Optional[float] = None
    compile_ms: Optional[float] = None
    speedup: Optional[float] = None
    speedup_vs_compile: Optional[float] = None
    timing: Optional[Dict[str, TimingStats]] = None
    flops: Optional[float] = None
    min_bytes: Optional[int] = None
    # What eager's aten ops read and write, op by op (traffic.count_moved_bytes): beside min_bytes,
    # how much an unfused reference moves more than it must.
    moved_bytes: Optional[int] = None
    input_bytes: Optional[int] = None  # the inputs' bytes (what a CUDA graph's replay copies in)
    output_bytes: Optional[int] = None  # the outputs' bytes (what a graph's replay clones out)
    copied_tensors: Optional[int] = None  # the input and output tensors (a graph's copies per replay)
    sol_ms: Optional[float] = None
    # The one FLOP rate (TFLOP/s) at which the problem's FLOPs take sol_ms's compute time, each
    # arithmetic unit at its own peak (costmodel.effective_peak_tflops): the driver's ridge point.
    sol_peak_tflops: Optional[float] = None
    # SOL-ExecBench's score of the candidate's time (costmodel.sol_score) with eager as T_b, and
    # with torch.compile of the reference as T_b where that was timed.
    sol_score: Optional[float] = None
    sol_score_vs_compile: Optional[float] = None
    flags: List[str] = field(default_factory=list)
    error: Optional[str] = None
    error_kind: Optional[str] = None
    trials: List[Trial] = field(default_factory=list)
    outputs: List[OutputSpec] = field(default_factory=list)
    device_name: Optional[str] = None
    torch_version: Optional[str] = None
    traceback: Optional[str] = None
    reference_cache_hits: int = 0
    reference_computations: int = 0
    # eval on CUDA: the judge's peak device memory against eager's own (memory.py)
    memory: Optional[Dict[str, Any]] = None
    # eval only: seconds per phase of the request (phases.py), "other" and "total" included
    phase_seconds: Optional[Dict[str, float]] = None
    # eval on CUDA: the most device memory allocated during each phase, in bytes (phases.py)
    phase_peak_bytes: Optional[Dict[str, int]] = None
    # eval with "profile": profile signatures (signature.py) of the candidate and the reference
    signature: Optional[Dict[str, Any]] = None
    reference_signature: Optional[Dict[str, Any]] = None
    notes: List[str] = field(default_factory=list)
    # op "ceilings" only
    bandwidth_gbs: Optional[float] = None
    peak_tflops_fp32: Optional[float] = None
    peak_tflops_tf32: Optional[float] = None
    peak_tflops_bf16: Optional[float] = None  # CUDA: bfloat16 and float16 matmul on the tensor cores
    peak_tflops_fp16: Optional[float] = None
    # eval with "workloads": the responses of the problems judged after the first (this one), in
    # order; fewer than asked when one failed or the rest did not fit beside them (workloads.py)
    more_workloads: Optional[List[Dict[str, Any]]] = None

    def add_flag(self, flag: str) -> None:
        if flag not in self.flags:
            self.flags.append(flag)

    def add_note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def record_failure(self, exc: BaseException, timeout_s: Optional[float]) -> None:
        """A WorkerError or WorkerTimeout (the request's timeout_s) that ended the evaluation, as its
        verdict; called while it is handled, for its traceback. correct stays as the op left it
        (False for eval, set before anything runs; null otherwise)."""
        if isinstance(exc, WorkerError):
            self.error_kind, self.error = exc.kind, exc.message
            self.traceback = exc.traceback_text or traceback.format_exc()
        else:
            self.error_kind, self.error = "timeout", f"request exceeded timeout_s={timeout_s}"
            self.traceback = traceback.format_exc()

    def record_phases(self, phases: Phases) -> None:
        self.phase_seconds = phases.seconds()
        self.phase_peak_bytes = phases.peak_bytes()

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        for trial in data["trials"]:
            trial["pass"] = trial.pop("passed")
        return data
