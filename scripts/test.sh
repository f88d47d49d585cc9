#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test:
# the GoogleTest suites through ctest, then the Python worker's pytest suite.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build}
MBLAST_WERROR=ON bash scripts/setup.sh

echo "== ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$(nproc)" --timeout 600

echo "== pytest"
if compgen -G "tests/python/test_*.py" >/dev/null; then
  # Debian's interpreter, which has python3-torch; not whatever python3 comes first on PATH.
  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python
else
  echo "no Python tests yet"
fi
echo "== all tests passed"
