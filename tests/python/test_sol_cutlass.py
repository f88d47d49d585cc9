"""Where a C++ solution finds CUTLASS (mblast_sol/extension.py): every C++ solution gets its headers
where they are found, as SOL-ExecBench's harness gives them; one in the cutlass language, or one
naming CUTLASS among its dependencies, fails with a hint that works when they are missing."""

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import PROBLEMS
from mblast_sol import extension
from mblast_sol.formats import load_problem_dir
from mblast_sol.solution import candidate_source, parse_solution

SMALL = PROBLEMS / "sol" / "rmsnorm_small"


def headers(root: Path) -> Path:
    include = root / "include"
    (include / "cutlass").mkdir(parents=True)
    (include / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    return include


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No CUTLASS anywhere: the default folders point into an empty temporary folder."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(extension, "CUTLASS_DIRS", (str(empty),))
    monkeypatch.delenv("MBLAST_CUTLASS_DIR", raising=False)
    monkeypatch.delenv("CUTLASS_DIR", raising=False)
    return empty


def test_the_cutlass_language_or_a_cutlass_dependency_requires_it() -> None:
    assert extension.requires_cutlass(["cutlass"], [])
    assert extension.requires_cutlass(["cuda_cpp"], ["CUTLASS_3_7"])
    assert not extension.requires_cutlass(["cuda_cpp"], ["torch"])


def test_missing_headers_fail_only_a_solution_that_requires_them(nowhere: Path) -> None:
    assert extension.cutlass_include_paths(required=False) == []
    with pytest.raises(extension.ExtensionError, match="MBLAST_CUTLASS_DIR"):
        extension.cutlass_include_paths(required=True)


def test_the_hint_works_and_sol_execbenchs_own_variable_is_read(nowhere: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    include = headers(tmp_path / "cutlass-checkout")
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "cutlass-checkout"))
    assert extension.cutlass_include_paths(required=True)[0] == str(include)
    monkeypatch.setenv("MBLAST_CUTLASS_DIR", str(include))
    paths = extension.cutlass_include_paths(required=True)
    assert paths == [str(include), str(tmp_path / "cutlass-checkout" / "tools" / "util" / "include")]


def test_found_headers_reach_every_cpp_solution(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    include = headers(nowhere)
    monkeypatch.setattr(extension, "CUTLASS_DIRS", (str(include),))
    assert extension.cutlass_include_paths(required=False)[0] == str(include)


def test_a_cutlass_solution_without_headers_fails_before_any_build(nowhere: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def no_build(*args: Any) -> None:
        raise AssertionError("built without the headers it needs")

    monkeypatch.setattr(extension, "build", no_build)
    with pytest.raises(extension.ExtensionError, match="needs CUTLASS"):
        extension.load({"main.cpp": "int x;"}, {}, [], ["cutlass"], str(tmp_path / "cache"))


def test_the_candidate_file_carries_the_languages_the_build_reads() -> None:
    problem = load_problem_dir(str(SMALL))
    raw = json.loads((SMALL / "solution_cpp.json").read_text())
    raw["spec"]["languages"] = ["cutlass"]
    source = candidate_source(parse_solution(raw, "s"), problem.definition, problem.raw_definition)
    assert '"languages": ["cutlass"]' in source
