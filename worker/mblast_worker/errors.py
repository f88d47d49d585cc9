"""Exceptions that map onto the response's error_kind."""

from typing import Optional


class WorkerError(Exception):
    """A failure with a verdict: becomes a response with error and error_kind set."""

    kind: str = "candidate_runtime"

    def __init__(self, message: str, traceback_text: Optional[str] = None) -> None:
        super().__init__(message)
        self.message: str = message
        self.traceback_text: Optional[str] = traceback_text


class TaskError(WorkerError):
    """The problem file is unusable (syntax, missing names, raises, bad outputs)."""

    kind = "task"


class CandidateLoadError(WorkerError):
    kind = "candidate_load"


class CandidateRuntimeError(WorkerError):
    kind = "candidate_runtime"


class RequestError(Exception):
    """The request itself is malformed: the response has ok=false and no error_kind."""


class WorkerTimeout(BaseException):
    """Raised from SIGALRM. A BaseException so that candidate code's `except Exception`
    cannot swallow it."""
