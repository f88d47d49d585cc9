"""The child process Nsight Compute profiles: `python3 -m mblast_worker.ncu_target SPEC.json`.

Builds the candidate as Session.open does (same init seed, init inputs and state copied from the
problem's model, the candidate's TF32 setting), makes the inputs of one seed, runs `warmup`
forwards, then exactly one forward inside the NVTX range RANGE, the only one `ncu --nvtx-include`
keeps. Exit 0 when that forward ran; otherwise 1 and one line on stderr.
"""

import copy
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import List, Optional

RANGE = "mblast_profile"


@dataclass
class TargetSpec:
    problem: str
    candidate: str
    device: str
    init_seed: int
    seed: int
    allow_tf32: bool
    tolerance_policy: str
    grad: bool
    warmup: int = 2

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(asdict(self), fh)

    @staticmethod
    def read(path: str) -> "TargetSpec":
        with open(path, encoding="utf-8") as fh:
            return TargetSpec(**json.load(fh))


def run(spec: TargetSpec) -> None:
    import torch

    from .device import init_device, parse_device
    from .errors import CandidateLoadError, TaskError
    from .guards import PrecisionGuard, precision_settings
    from .loader import call_input_fn, construct, copy_matching_state, load_candidate, load_problem
    from .phases import Phases
    from .session import Inputs, seed_everything

    device = parse_device(spec.device)
    init_device(device)
    problem = load_problem(spec.problem)
    seed_everything(spec.init_seed)
    init_inputs = call_input_fn(problem, "get_init_inputs")
    precision = PrecisionGuard(*precision_settings(spec.tolerance_policy == "strict", spec.allow_tf32))
    ref_model = construct(problem.model_cls, copy.deepcopy(init_inputs), spec.init_seed, device, problem.path,
                          TaskError)
    precision.enter_candidate()
    candidate = load_candidate(spec.candidate)
    model = construct(candidate.model_cls, copy.deepcopy(init_inputs), spec.init_seed, device, candidate.path,
                      CandidateLoadError)
    copy_matching_state(ref_model, model)
    del ref_model
    inputs = Inputs(problem, device, Phases()).make(spec.seed)
    on_gpu = device.type == "cuda"
    with torch.set_grad_enabled(spec.grad):
        for _ in range(spec.warmup):
            precision.enter_candidate()
            model(*inputs)
        if on_gpu:
            torch.cuda.synchronize(device)
        precision.enter_candidate()
        if on_gpu:  # NVTX needs a CUDA build; on the CPU (tests) the forward just runs
            torch.cuda.nvtx.range_push(RANGE)
        model(*inputs)
        if on_gpu:
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize(device)


def _one_line(exc: BaseException) -> str:
    message = (getattr(exc, "message", None) or str(exc)).strip()
    first = message.splitlines()[0] if message else ""
    return f"{type(exc).__name__}: {first}"


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m mblast_worker.ncu_target SPEC.json", file=sys.stderr)
        return 2
    try:
        run(TargetSpec.read(args[0]))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure is one line for the parent
        print(f"ncu_target: {_one_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no atexit handlers or threads of candidate code can hang the exit
