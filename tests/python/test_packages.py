"""The worker tree's packages, one per job: each has its one entry point, and none imports a
package its job does not need (the judge knows nothing of bundles, exports or transforms; the
candidates' runtime knows nothing of mblast's other packages)."""

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, Set

import pytest

from conftest import WORKER_DIR, worker_env

PACKAGES = ("mblast_worker", "mblast_bundle", "mblast_builtin", "mblast_cuda", "mblast_export", "mblast_regions")

# What each package may import of the others.
ALLOWED: Dict[str, Set[str]] = {
    "mblast_worker": set(),
    "mblast_bundle": {"mblast_worker"},
    "mblast_builtin": set(),
    "mblast_cuda": set(),
    "mblast_export": {"mblast_cuda"},
    "mblast_regions": {"mblast_worker"},
}


def _sources(package: str) -> list:
    single = WORKER_DIR / f"{package}.py"
    return [single] if single.exists() else sorted((WORKER_DIR / package).glob("*.py"))


def _imported_packages(path: Path) -> Set[str]:
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_what_its_job_needs(package: str) -> None:
    for path in _sources(package):
        extra = _imported_packages(path) - ALLOWED[package] - {package}
        assert not extra, f"{path.relative_to(WORKER_DIR)} imports {sorted(extra)}"


@pytest.mark.parametrize("package",
                         ["mblast_worker", "mblast_bundle", "mblast_builtin", "mblast_export", "mblast_regions"])
def test_each_command_line_package_answers_bad_usage_with_its_usage(package: str) -> None:
    done = subprocess.run([sys.executable, "-m", package], env=worker_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert "usage" in done.stderr.lower()


def test_the_candidates_runtime_has_no_command_line() -> None:
    assert not (WORKER_DIR / "mblast_cuda" / "__main__.py").exists()
