#!/usr/bin/env bash
# The wall of `mblast eval` on a SOL-ExecBench problem of many small workloads (issue 25): the
# test problem tests/problems/sol/rmsnorm_small with 14 workloads (1 to 64 rows), its reference
# against itself and its PyTorch solution, twice each (the first computes the float64
# references, the second reads them from the cache). One column per binary, to compare builds:
#
#   benchmarks/sol_workloads_wall.sh [MBLAST...]     # default build/mblast; DEVICE=cuda on a GPU
#
# Each evaluation's `workloads` also tell how many workers judged them (worker_pid).
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=("${@:-build/mblast}")
device=${DEVICE:-cpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
problem=$work/rmsnorm14
mkdir -p "$problem"
cp tests/problems/sol/rmsnorm_small/definition.json tests/problems/sol/rmsnorm_small/solution_dps.json "$problem/"
for rows in 1 2 3 4 5 6 7 8 12 16 24 32 48 64; do
  printf '{"uuid": "w-rows-%s", "axes": {"batch_size": %s}, "inputs": {"x": {"type": "random"}, "weight": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-06}}}\n' \
    "$rows" "$rows"
done >"$problem/workload.jsonl"

printf '| binary | candidate | run | wall s | correct | workloads | workers | speedup |\n|---|---|---:|---:|---|---:|---:|---:|\n'
for i in "${!binaries[@]}"; do
  binary=${binaries[$i]}
  for candidate in definition.json solution_dps.json; do
    for run in 1 2; do
      start=$(date +%s.%N)
      "$binary" eval "$problem" --candidate "$problem/$candidate" --device "$device" --json --seeds 2 --runs 5 \
        --cache-dir "$work/cache-$i" >"$work/out.json" 2>"$work/err.txt" || true
      end=$(date +%s.%N)
      python3 - "$binary" "$candidate" "$run" "$start" "$end" "$work/out.json" "$work/err.txt" <<'PY'
import json, sys
binary, candidate, run, start, end, out, err = sys.argv[1:8]
try:
    r = json.load(open(out))
except (OSError, ValueError):
    print(f"| {binary} | {candidate} | {run} | - | no result: {open(err).read().strip()[-120:]} | | | |")
    sys.exit(0)
w = r.get("workloads") or []
pids = {x.get("worker_pid") for x in w if x.get("worker_pid") is not None}
speedup = r.get("speedup")
print(f"| {binary} | {candidate} | {run} | {float(end) - float(start):.1f} | {r.get('correct')} | {len(w)} | "
      f"{len(pids) or 'unknown'} | {speedup:.3f} |" if isinstance(speedup, (int, float)) else "- |")
PY
    done
  done
done
