"""benchmarks/sample_slice.py: the benchmark lists parse, name problems KernelBench has, and split
into slices that cover a level once, in order; bad input exits 2 with the reason."""

import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import sample_slice  # noqa: E402

LISTS = ["kernelbench_sample30.txt", "kernelbench_arms20.txt", "states_check.txt"]
KERNELBENCH = ROOT.parent / "shared" / "kernelbench"


@pytest.mark.parametrize("sizes", [(20, 4), (7, 3), (10, 1), (3, 3)])
def test_slices_cover_the_level_once_in_order(sizes):
    total, parts = sizes
    problems = list(range(100, 100 + total))
    slices = [sample_slice.slice_of(problems, k, parts) for k in range(1, parts + 1)]
    assert [p for s in slices for p in s] == problems
    assert max(map(len, slices)) - min(map(len, slices)) <= 1


@pytest.mark.parametrize("name", LISTS)
def test_every_list_parses_and_names_existing_problems(name):
    levels = sample_slice.read_levels(ROOT / "benchmarks" / name)
    assert levels and all(levels.values())
    if not KERNELBENCH.is_dir():
        pytest.skip(f"no KernelBench at {KERNELBENCH}")
    for level, problems in levels.items():
        assert sample_slice.missing_files(KERNELBENCH, level, problems) == [], (name, level)


def test_the_arms_list_holds_the_sample_of_its_levels_and_twenty_each():
    sample = sample_slice.read_levels(ROOT / "benchmarks" / "kernelbench_sample30.txt")
    arms = sample_slice.read_levels(ROOT / "benchmarks" / "kernelbench_arms20.txt")
    for level in (2, 3):
        assert len(arms[level]) == 20
        assert arms[level][:10] == sample[level]


def test_the_command_prints_a_slice(capsys):
    assert sample_slice.main([str(ROOT / "benchmarks" / "kernelbench_arms20.txt"), "3", "2/4"]) == 0
    assert capsys.readouterr().out.strip() == "19,28,35,43,44"


@pytest.mark.parametrize("args, reason", [
    (["3", "5/4"], "K must be between 1 and N"),
    (["3", "two"], "expected K/N"),
    (["1"], "has no level 1"),
])
def test_bad_input_exits_2_with_the_reason(args, reason, capsys):
    assert sample_slice.main([str(ROOT / "benchmarks" / "kernelbench_arms20.txt"), *args]) == 2
    assert reason in capsys.readouterr().err


def test_a_malformed_line_is_named(tmp_path, capsys):
    bad = tmp_path / "list.txt"
    bad.write_text("# a comment\n2 1,2,2\n")
    assert sample_slice.main([str(bad), "2"]) == 2
    assert "list.txt:2" in capsys.readouterr().err


def test_a_missing_problem_file_is_named(tmp_path, capsys):
    (tmp_path / "level2").mkdir()
    (tmp_path / "level2" / "1_Conv.py").write_text("")
    listed = tmp_path / "list.txt"
    listed.write_text("2 1,7\n")
    assert sample_slice.main([str(listed), "2", "--kernelbench", str(tmp_path)]) == 2
    assert "[7]" in capsys.readouterr().err
