"""One candidate judged on several problems in one process: a SOL-ExecBench problem's workloads,
as SOL-ExecBench's own harness judges a solution's workloads. A worker's start (PyTorch, a CUDA
context) takes longer than judging a small workload, and a problem of fourteen workloads spent most
of each step waiting for workers.

Every problem is prepared first, while the cache is open (candidate code must never reach it),
until what the prepared ones hold reaches MOST_HELD_BYTES; then the candidate's module is
imported once and judged on each in turn, stopping at the first problem it fails. So its compiled
code meets every workload's shapes in one process, as in SOL-ExecBench's harness and in a model
that serves them (torch.compile goes dynamic from the second shape). A problem judged against
itself (the candidate is the first problem's own file) is each problem against its own file,
imported at its turn.

The response is the first problem's, with the others' in "more_workloads"; problems left out by
the budget are the driver's to ask for again. Before each problem after the first, "workload"
progress (its index and eager time) restarts the driver's compile allowance. The candidate's ops
are recorded only on the last problem judged: no call may follow a recording
(evaluate._after_trials). Each problem's "memory" and "phase_seconds" cover its own preparation
and judging, not the others'."""

import dataclasses
import gc
from typing import Callable, List, Optional

import torch

from . import memory, progress
from .cachedir import CacheDir
from .errors import WorkerError, WorkerTimeout
from .evaluate import evaluate
from .guards import NamespaceSnapshot
from .loader import Candidate
from .phases import Phases
from .request import Request
from .response import Response
from .session import PreparedProblem, Session, close_cache, import_candidate

# What the prepared problems may hold at once (their float64 references on the host, their
# reference models on the device) before the rest are left to another request.
MOST_HELD_BYTES = 4 << 30


@dataclasses.dataclass
class _Workload:
    req: Request
    resp: Response
    phases: Phases
    reached: bool = False  # judged, or failed in its preparation: its response is part of the answer


def evaluate_workloads(req: Request, resp: Response, device: torch.device, new_phases: Callable[[], Phases]) -> None:
    """Judges req.candidate on req.problem, then on each of req.workloads (see the module's
    docstring); resp is the first problem's response and gets the others' in more_workloads."""
    assert req.problem is not None
    against_itself = req.candidate == req.problem
    # A held request (the driver's prebuild) holds after the first problem's first call only.
    workloads = [_Workload(dataclasses.replace(req, problem=path, candidate=path if against_itself else req.candidate,
                                               workloads=[], hold=req.hold and i == 0),
                           resp if i == 0 else _sibling(resp), new_phases())
                 for i, path in enumerate([req.problem] + req.workloads)]
    try:
        prepared: List[Optional[PreparedProblem]] = list(_prepare(workloads, device, resp))
        first = prepared[0]
        assert first is not None
        progress.report("prepared", eager_ms=first.facts.eager_ms)
        namespaces = NamespaceSnapshot.take()  # after the (trusted) problems, before the candidate
        candidate: Optional[Candidate] = None  # against itself: each problem's own file, at its turn
        if not against_itself:
            with workloads[0].phases.phase("load"):
                candidate = import_candidate(first, namespaces)
        del first
        _judge_each(workloads, prepared, candidate, namespaces, device)
    finally:
        for workload in workloads:
            if workload.resp.phase_seconds is None:
                workload.resp.record_phases(workload.phases)
        resp.more_workloads = [w.resp.to_dict() for w in workloads[1:] if w.reached]


def _sibling(first: Response) -> Response:
    return Response(ok=True, correct=False, torch_version=first.torch_version, device_name=first.device_name)


def _prepare(workloads: List[_Workload], device: torch.device, first: Response) -> List[PreparedProblem]:
    """The problems in order until what they hold reaches MOST_HELD_BYTES (the first always). A later
    problem that cannot be prepared ends the list, its error in its response (reached only when
    every problem before it passes)."""
    prepared: List[PreparedProblem] = []
    held = 0
    cache = CacheDir.open(workloads[0].req.cache_dir)
    try:
        for i, workload in enumerate(workloads):
            if prepared and held >= MOST_HELD_BYTES:
                break
            try:
                with workload.phases.phase("load"):
                    problem = PreparedProblem.open(workload.req, workload.resp, device, workload.phases, cache)
            except WorkerError as exc:
                if i == 0:
                    raise
                workload.resp.record_failure(exc, workload.req.timeout_s)
                break
            prepared.append(problem)
            held += problem.held_bytes()
    finally:
        close_cache(cache, first)
    return prepared


def _judge_each(workloads: List[_Workload], prepared: List[Optional[PreparedProblem]],
                candidate: Optional[Candidate], namespaces: NamespaceSnapshot, device: torch.device) -> None:
    for i in range(len(prepared)):
        problem = prepared[i]
        assert problem is not None
        workloads[i].reached = True
        if i > 0:
            progress.report("workload", index=i, eager_ms=problem.facts.eager_ms)
        memory.restart(device)  # each workload's memory report covers its own judging
        workloads[i].phases.count_from_now()
        passed = _judge(workloads[i], problem, candidate, namespaces, last=i == len(prepared) - 1, first=i == 0)
        workloads[i].resp.record_phases(workloads[i].phases)
        if not passed:
            return
        prepared[i] = problem = None  # its references and reference model go before the next is judged
        gc.collect()
        memory.release_cached_blocks(device)
    if len(prepared) < len(workloads) and workloads[len(prepared)].resp.error is not None:
        workloads[len(prepared)].reached = True  # its preparation failed: the answer's last


def _judge(workload: _Workload, problem: PreparedProblem, candidate: Optional[Candidate],
           namespaces: NamespaceSnapshot, last: bool, first: bool) -> bool:
    """Whether the candidate passed. The first problem's exceptions are the request's (ops.handle);
    a later one's end only that problem's evaluation."""
    try:
        with workload.phases.phase("load"):
            session = Session.attach(problem, candidate or import_candidate(problem, namespaces), namespaces)
        evaluate(session, record_ops=last)
    except (WorkerTimeout, WorkerError) as exc:
        if first:
            raise
        workload.resp.record_failure(exc, workload.req.timeout_s)
    return bool(workload.resp.correct)


