#!/usr/bin/env bash
# Builds kb_bench (Release, in ${BUILD_DIR:-build}) and runs it; arguments go to kb_bench.
#   scripts/bench.sh [--attempts N] [--queries N] [--seed S] [--kb PATH] [--json]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build}"
case "$build_dir" in
  /*) ;;
  *) build_dir="$root/$build_dir" ;;
esac

if [[ ! -d "$build_dir" ]]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build_dir" --target kb_bench >&2
exec "$build_dir/benchmarks/kb_bench" "$@"
