"""Executing one request: every outcome, including exceptions, becomes a Response."""

import signal
import sys
import traceback
from typing import Any, Dict, Optional

import torch

from . import ceilings, memory
from .costmodel import count_flops, min_bytes
from .device import device_name, init_device, parse_device
from .errors import RequestError, TaskError, WorkerError, WorkerTimeout
from .evaluate import evaluate
from .loader import call_input_fn, construct, load_problem
from .phases import Phases
from .request import Request, parse_request
from .response import OutputSpec, Response
from .session import Session, seed_everything
from .tensors import clone_all, dtype_name, to_device
from .workloads import evaluate_workloads


def handle(raw: Any, default_device: str) -> Dict[str, Any]:
    resp = Response(torch_version=str(torch.__version__))
    if isinstance(raw, str):  # the caller could not even read a request
        resp.error = f"bad request: {raw}"
        return resp.to_dict()
    try:
        req = parse_request(raw, default_device)
    except RequestError as exc:
        resp.error = f"bad request: {exc}"
        return resp.to_dict()
    try:
        with _soft_timeout(req.timeout_s):
            device = parse_device(req.device)
            init_device(device)
            resp.device_name = device_name(device)
            resp.ok = True
            _dispatch(req, resp, device)
    except (WorkerTimeout, WorkerError) as exc:
        resp.record_failure(exc, req.timeout_s)
    except Exception as exc:  # noqa: BLE001 - a worker bug still gets a well-formed answer
        resp.ok = False
        resp.error = f"worker failure: {type(exc).__name__}: {exc}"
        resp.traceback = traceback.format_exc()
    return resp.to_dict()


def _dispatch(req: Request, resp: Response, device: torch.device) -> None:
    if req.op == "ceilings":
        resp.bandwidth_gbs, resp.peak_tflops_fp32 = ceilings.measure(device)
        resp.peak_tflops_tf32 = ceilings.measure_tf32(device)
        resp.peak_tflops_bf16 = ceilings.measure_half(device, torch.bfloat16)
        resp.peak_tflops_fp16 = ceilings.measure_half(device, torch.float16)
    elif req.op == "check_task":
        _check_task(req, resp, device)
    else:
        resp.correct = False
        if req.workloads:
            evaluate_workloads(req, resp, device, lambda: _new_phases(device))
            return
        phases = _new_phases(device)
        try:
            with phases.phase("load"):
                session = Session.open(req, resp, device, phases)
            evaluate(session)
        finally:
            resp.record_phases(phases)


def _new_phases(device: torch.device) -> Phases:
    return Phases(peak_reader=(lambda: memory.take_window(device)) if device.type == "cuda" else None)


def _check_task(req: Request, resp: Response, device: torch.device) -> None:
    assert req.problem is not None
    problem = load_problem(req.problem)
    seed_everything(req.init_seed)
    init_inputs = call_input_fn(problem, "get_init_inputs")
    model = construct(problem.model_cls, init_inputs, req.init_seed, device, problem.path, TaskError)
    seed_everything(req.seeds[0])
    inputs = to_device(call_input_fn(problem, "get_inputs"), device)
    try:
        with torch.no_grad():
            raw = model(*clone_all(inputs))
    except (Exception, SystemExit) as exc:
        raise TaskError(f"{problem.path}: Model.forward raised {type(exc).__name__}: {exc}", traceback.format_exc()) from None
    outs = raw if type(raw) is tuple else (raw,) if isinstance(raw, torch.Tensor) else None
    if outs is None:
        raise TaskError(f"{problem.path}: forward returned {type(raw).__name__}, expected tensor or tuple of tensors")
    if not all(isinstance(o, torch.Tensor) for o in outs):
        raise TaskError(f"{problem.path}: forward returned a tuple holding non-tensors, expected tensors")
    resp.outputs = [OutputSpec(list(o.shape), dtype_name(o.dtype)) for o in outs]
    resp.min_bytes = min_bytes(inputs, model, list(outs))

    def forward() -> Any:
        with torch.no_grad():
            return model(*clone_all(inputs))

    try:
        resp.flops = count_flops(forward)
    except Exception as exc:  # noqa: BLE001
        resp.add_note(f"FLOP counting failed: {type(exc).__name__}: {exc}")


class _soft_timeout:
    """SIGALRM-based limit; interrupts Python code only (a stuck kernel needs the driver's kill)."""

    def __init__(self, seconds: Optional[float]) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        if self.seconds and self.seconds > 0 and hasattr(signal, "setitimer"):
            signal.signal(signal.SIGALRM, _raise_timeout)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.seconds and hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)


def _raise_timeout(signum: int, frame: Any) -> None:
    raise WorkerTimeout()


def python_version() -> str:
    return ".".join(str(p) for p in sys.version_info[:3])
