"""What the verification trials learn about a candidate, before it becomes a response."""

from dataclasses import dataclass, field
from typing import Any, List, Optional, Set, Tuple

from .compare import REL_L2_LIMIT, Tol
from .response import ErrLocation


@dataclass
class Verdict:
    """Everything the trials learn; turned into the response at the end."""

    base: Tol
    policy: str
    error_kind: Optional[str] = None
    error: Optional[str] = None
    tol: Optional[Tol] = None  # loosest tolerance any trial used
    widened_by_eager: bool = False
    rel_l2_limit: float = REL_L2_LIMIT
    worst_ratio: float = -1.0
    location: Optional[ErrLocation] = None
    max_abs: float = 0.0
    max_rel: float = 0.0
    rel_l2: float = 0.0
    eager_abs: float = 0.0
    eager_rel: float = 0.0
    eager_err: float = 0.0  # eager's policy error (compare.eager_error), largest over the seeds
    calls: List[Tuple[Any, Any, bool]] = field(default_factory=list)  # (input digest, output digest, passed)
    cand_mutated_inputs: Set[int] = field(default_factory=set)
    
    def fail(self, kind: str, message: str) -> None:
        if self.error_kind is None:
            self.error_kind, self.error = kind, message

    @property
    def failed(self) -> bool:
        return self.error_kind is not None
