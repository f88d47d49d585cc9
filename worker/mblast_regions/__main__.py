"""python3 -m mblast_regions PROBLEM.py [--device DEVICE]: the problem's Model as a graph of ops,
each op's measured time share and the region windows, as one JSON object on stdout."""

import argparse
import importlib.util
import json
import sys
from typing import Any, Dict, List, Optional

import torch

from .extract import region_module, replace_region, same_outputs
from .graph import capture
from .timing import op_times, time_shares
from .windows import region_windows


def regions_of(path: str, device: str, seed: int = 0) -> Dict[str, Any]:
    spec = importlib.util.spec_from_file_location("mblast_problem", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path} is not a Python file")
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    torch.manual_seed(seed)
    init = problem.get_init_inputs() if hasattr(problem, "get_init_inputs") else []
    model = problem.Model(*init).to(device).eval()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    captured = capture(model, inputs)
    if captured.module is None or captured.graph is None:
        return {"captured": False, "failure": captured.failure}
    shares = time_shares(op_times(captured.module, inputs))
    windows = region_windows(captured.graph, shares)
    # Each window cut out and put back must compute what the model does.
    module = captured.module
    checks = [same_outputs(model, replace_region(module, w, region_module(module, w)), inputs) for w in windows]
    ops: List[Dict[str, Any]] = captured.graph.to_json()["ops"]
    for op in ops:
        op["share"] = shares.get(op["name"], 0.0)
    return {"captured": True, "inputs": captured.graph.inputs, "outputs": captured.graph.outputs, "ops": ops,
            "windows": [w.to_json() for w in windows], "windows_recompose": all(checks)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mblast_regions", description=__doc__)
    parser.add_argument("problem", help="a KernelBench-style problem file (Model, get_inputs, get_init_inputs)")
    parser.add_argument("--device", default="cpu", help="where to run and time it (cpu, cuda)")
    args = parser.parse_args(argv)
    try:
        result = regions_of(args.problem, args.device)
    except (OSError, ValueError, AttributeError) as exc:
        sys.stderr.write(f"mblast_regions: {args.problem}: {exc}\n")
        return 2
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
