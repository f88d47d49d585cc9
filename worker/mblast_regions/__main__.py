"""python3 -m mblast_regions PROBLEM.py [--device DEVICE]: the problem's Model as a graph of ops,
each op's measured time share and the region windows, as one JSON object on stdout."""

import argparse
import json
import sys
from typing import Any, Dict, List, Optional

import torch

from mblast_worker.errors import TaskError
from mblast_worker.loader import call_input_fn, construct, load_problem

from .extract import outputs_of, region_code, region_module, replace_region, same_values
from .graph import capture
from .identity import region_identity
from .timing import op_times, time_shares
from .windows import region_windows


def regions_of(path: str, device_name: str, seed: int = 0) -> Dict[str, Any]:
    """Loaded, built and called as the judge does (mblast_worker.loader): a problem it would
    refuse raises TaskError here too."""
    device = torch.device(device_name)
    problem = load_problem(path)
    model = construct(problem.model_cls, call_input_fn(problem, "get_init_inputs"), seed, device, path,
                      TaskError).eval()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in call_input_fn(problem, "get_inputs")]
    captured = capture(model, inputs)
    if captured.module is None or captured.graph is None:
        return {"captured": False, "failure": captured.failure}
    shares = time_shares(op_times(captured.module, inputs))
    windows = region_windows(captured.graph, shares)
    # Each window cut out and put back must compute what the model does.
    module = captured.module
    expected = outputs_of(model, inputs)
    cut_out = [region_module(module, w) for w in windows]
    checks = [same_values(expected, outputs_of(replace_region(module, w, region), inputs))
              for w, region in zip(windows, cut_out)]
    ops: List[Dict[str, Any]] = captured.graph.to_json()["ops"]
    for op in ops:
        op["share"] = shares.get(op["name"], 0.0)
    return {"captured": True, "inputs": captured.graph.inputs, "outputs": captured.graph.outputs, "ops": ops,
            "windows": [{**w.to_json(), **region_identity(module, w), "code": region_code(region)}
                        for w, region in zip(windows, cut_out)],
            "windows_recompose": all(checks)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mblast_regions", description=__doc__)
    parser.add_argument("problem", help="a KernelBench-style problem file (Model, get_inputs, get_init_inputs)")
    parser.add_argument("--device", default="cpu", help="where to run and time it (cpu, cuda)")
    args = parser.parse_args(argv)
    try:
        result = regions_of(args.problem, args.device)
    except TaskError as exc:
        sys.stderr.write(f"mblast_regions: {exc.message}\n")
        return 2
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
