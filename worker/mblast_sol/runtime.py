"""What a problem file written by problem_file.py imports inside the judge: its workload's inputs,
its reference's outputs in the judge's form and its tolerance."""

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .formats import Definition, Workload, parse_definition, parse_workload
from .inputs import CustomFn, WorkloadInputs, output_tuple


@dataclass
class ProblemSide:
    definition: Definition
    workload: Workload
    maker: WorkloadInputs

    def inputs(self) -> List[Any]:
        return self.maker.make()

    def outputs(self, result: Any) -> Any:
        return output_tuple(result, self.definition)

    def tolerance(self) -> Dict[str, Any]:
        """In the judge's terms (mblast_worker.compare.Tol): the workload's atol and rtol, the share
        of elements that must be within them, and the cap on any element's absolute error."""
        t = self.workload.tolerance
        return {"atol": t.max_atol, "rtol": t.max_rtol, "matched_ratio": t.required_matched_ratio,
                "error_cap": t.max_error_cap}


def problem_side(definition_json: str, workload_json: str, directory: str,
                 custom: Optional[CustomFn]) -> ProblemSide:
    definition = parse_definition(json.loads(definition_json), check_reference=False)
    workload = parse_workload(json.loads(workload_json), definition, "workload")
    return ProblemSide(definition, workload, WorkloadInputs(definition, workload, directory, custom))
