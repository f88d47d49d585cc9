#!/usr/bin/env bash
# Judges the reference of a problem against itself several times on the CPU and prints the
# speedups: they should all be 1.0 within noise. A spread beyond a few percent means the judge's
# timing favours one contender (it once did: page faults of freshly mapped outputs).
#   usage: benchmarks/timing_sanity.sh [PROBLEM.py] [REPEATS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
mblast=${BUILD_DIR:-build}/mblast
problem=${1:-benchmarks/problems/row_softmax.py}
repeats=${2:-5}
runs=${3:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PYTHONPATH=worker python3 -m mblast_builtin reference "$problem" >"$work/identity.py"
printf '%-6s %-10s %-10s %s\n' repeat ref_ms cand_ms speedup
for i in $(seq 1 "$repeats"); do
  "$mblast" -q eval "$problem" --candidate "$work/identity.py" --device cpu --seeds 1 \
    --runs "$runs" --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
print(f\"{$i:<6} {d['ref_ms']:<10.4f} {d['cand_ms']:<10.4f} {d['speedup']:.3f}\")"
done
