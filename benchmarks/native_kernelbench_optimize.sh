#!/usr/bin/env bash
# Runs `mblast optimize` on five KernelBench level-1 problems at reduced sizes (--shrink 65536)
# for OpenCL (PoCL on this CPU) and RVV (QEMU, deterministic cost), with the authored cassettes
# and the plain C baselines of benchmarks/examples/kernelbench, and prints one row per run: the
# baselines and the verified candidate's speedup over each, the headline first. Bundles and
# baselines are made afresh in a cache of the run's own (PyTorch's CPU time is measured then).
#   benchmarks/native_kernelbench_optimize.sh KERNELBENCH/level1
#   BUILD_DIR  where mblast is (default build)
set -euo pipefail
if [[ $# -ne 1 || ! -d $1 ]]; then
  echo "usage: $0 KERNELBENCH/level1 (the folder of KernelBench's level-1 problems)" >&2
  exit 2
fi
level1=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
mblast=${BUILD_DIR:-build}/mblast
examples=benchmarks/examples/kernelbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-7s %-36s %-10s %-58s %s\n' backend problem sizes baselines "candidate: speedups"
for backend in opencl rvv; do
  for stem in 19_ReLU 21_Sigmoid 23_Softmax 47_Sum_reduction_over_a_dimension \
    1_Square_matrix_multiplication_; do
    case "$backend/$stem" in
      opencl/1_*) technique=opencl/thread-coarsening ;;
      opencl/23_* | opencl/47_*) technique=opencl/work-group-reduction ;;
      opencl/*) technique=opencl/vector-types ;;
      rvv/21_*) technique=rvv/vector-math-functions ;;
      rvv/23_*) technique=rvv/vector-reductions ;;
      rvv/1_*) technique=rvv/register-blocking-matmul ;;
      rvv/*) technique=rvv/strip-mining-vsetvl ;;
    esac
    "$mblast" -q --kb "$work/kb.sqlite" optimize "$level1/$stem.py" --backend "$backend" \
      --shrink 65536 --baselines "$examples/level1" \
      --llm "replay:$examples/$backend.cassette.jsonl" --technique "$technique" \
      --iterations 1 --steps 1 --out "$work/$backend-$stem" --cache-dir "$work/cache" --json \
      >"$work/$backend-$stem.json"
    python3 - "$work/$backend-$stem.json" "$backend" "$stem" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
unit = lambda v, u: f"{v:.4f}ms" if u == "ms" else f"{v:.0f}"
base = ", ".join(f"{b['name']} {unit(b['value'], b['unit'])}" for b in r["baselines"])
sizes = f"/{r['shrink']['factor']}" if r.get("shrink") else "full"
best = r["best_speedup"]
if best is None:
    ups = "not correct: " + r.get("stop_reason", "")
else:
    head = r["baselines"][0]
    cand = unit(head["value"] / best, head["unit"])
    # best is over the headline baseline; over another, scale by its value against the headline.
    ups = cand + ": " + ", ".join(f"{best * b['value'] / head['value']:.2f}x vs {b['name']}" for b in r["baselines"])
print(f"{sys.argv[2]:<7} {sys.argv[3]:<36} {sizes:<10} {base:<58} {ups}")
PY
  done
done
