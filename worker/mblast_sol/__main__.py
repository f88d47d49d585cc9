"""python3 -m mblast_sol problem DIR --out OUT: one problem file per workload and manifest.json in
OUT, the manifest on stdout. python3 -m mblast_sol solution DIR SOLUTION.json --out FILE: the
solution as a candidate file. Exit 2: the files break the format (stderr names the field); exit 3:
a well-formed solution that mblast cannot run yet (stderr says why)."""

import argparse
import json
import os
import sys
from typing import List, Optional

from .formats import FormatError, load_problem_dir, read_json
from .problem_file import write_problem_files
from .solution import Solution, UnsupportedSolution, candidate_source, parse_solution


def _build_ahead(solution: Solution, cache: str) -> dict:
    """A C++ solution built into the judge's cache, outside the sandbox; a failure is reported and
    left for the worker to meet again (as the candidate's load error)."""
    from .extension import cache_under, load

    try:
        load(solution.sources, solution.compile_options, solution.dependencies, solution.languages,
             cache_under(cache))
    except Exception as exc:  # noqa: BLE001 - any build failure is the candidate's, reported
        return {"built_ahead": False, "build_error": f"{type(exc).__name__}: {exc}"[-4000:]}
    return {"built_ahead": True}


def _solution(problem_path: str, solution_path: str, out: str, build_cache: Optional[str]) -> dict:
    problem = load_problem_dir(problem_path)
    where = os.path.basename(solution_path)
    solution = parse_solution(read_json(solution_path, where), where)
    source = candidate_source(solution, problem.definition, problem.raw_definition)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(source)
    answer = {"candidate": os.path.abspath(out), "name": solution.name, "languages": solution.languages,
              "destination_passing_style": solution.dps}
    if solution.is_cpp and build_cache:
        answer.update(_build_ahead(solution, build_cache))
    return answer


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mblast_sol", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("problem", help="problem files per workload and their manifest")
    p.add_argument("problem", help="a SOL-ExecBench problem directory or its definition.json")
    p.add_argument("--out", required=True, help="folder for workload-NNN.py and manifest.json")
    s = sub.add_parser("solution", help="a solution.json as a candidate file")
    s.add_argument("problem", help="the problem directory or its definition.json")
    s.add_argument("solution", help="solution.json")
    s.add_argument("--out", required=True, help="the candidate file to write")
    s.add_argument("--build-cache", help="build a C++ solution ahead into the judge's CUDA build cache (MBLAST_CUDA_CACHE)")
    args = parser.parse_args(argv)
    try:
        if args.command == "problem":
            result = write_problem_files(load_problem_dir(args.problem), args.out)
        else:
            result = _solution(args.problem, args.solution, args.out, args.build_cache)
    except (FormatError, OSError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except UnsupportedSolution as exc:
        sys.stderr.write(f"{exc}\n")
        return 3
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
