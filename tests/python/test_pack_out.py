"""benchmarks/h200/pack_out.sh: a device call's output folder made to fit what the device tool returns
(at most 8 files of 16 MiB, 2 folders down), without losing the small files."""

import subprocess
import tarfile
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "h200" / "pack_out.sh"


def pack(folder: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), str(folder)], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **env}, check=False)


def test_a_folder_that_fits_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "table.md").write_text("| a |\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "run.json").write_text("{}")
    done = pack(tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["run.json", "table.md"]


def test_too_many_or_too_deep_files_go_into_one_archive_and_big_ones_are_listed(tmp_path: Path) -> None:
    for i in range(9):
        (tmp_path / f"problem-{i}.json").write_text(str(i))
    deep = tmp_path / "runs" / "p1" / "candidates"
    deep.mkdir(parents=True)
    (deep / "s001.py").write_text("print(1)\n")
    (tmp_path / "runs" / "cache.bin").write_bytes(b"\0" * (2 << 20))
    done = pack(tmp_path, BIG_MIB="1")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pack-left-out.txt", "pack.tgz"]
    with tarfile.open(tmp_path / "pack.tgz") as archive:
        names = sorted(archive.getnames())
        assert archive.extractfile("runs/p1/candidates/s001.py").read() == b"print(1)\n"
    assert names == sorted([f"problem-{i}.json" for i in range(9)] + ["runs/p1/candidates/s001.py"])
    assert (tmp_path / "pack-left-out.txt").read_text() == f"{2 << 20}\truns/cache.bin\n"


def test_a_missing_folder_is_bad_usage(tmp_path: Path) -> None:
    done = pack(tmp_path / "absent")
    assert done.returncode == 2
    assert "no folder" in done.stderr
