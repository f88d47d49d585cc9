#!/usr/bin/env bash
# Coverage of a KernelBench level on the native backends at reduced sizes: for every problem,
# whether mblast makes its tensor bundles and measures its OpenCL (PoCL) and RVV (QEMU)
# baselines, with each failure's cause (benchmarks/kernelbench_coverage.py). The RVV baselines
# are plain C twins: those of benchmarks/examples/kernelbench/level1 are used.
#   benchmarks/native_kernelbench_coverage.sh KERNELBENCH/level1 [--shrink N] [--jobs 2] ...
#   BUILD_DIR  where mblast is (default build)
set -euo pipefail
if [[ $# -lt 1 || ! -d $1 ]]; then
  echo "usage: $0 KERNELBENCH/LEVEL [options of benchmarks/kernelbench_coverage.py]" >&2
  exit 2
fi
level=$(cd "$1" && pwd)
shift
cd "$(dirname "$0")/.."
exec python3 benchmarks/kernelbench_coverage.py "$level" --mblast "${BUILD_DIR:-build}/mblast" \
  --baselines benchmarks/examples/kernelbench/level1 "$@"
