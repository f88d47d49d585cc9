#!/usr/bin/env bash
# Runs `mblast optimize` on the five native problems for OpenCL (PoCL on this CPU) and RVV (QEMU,
# deterministic cost) with the authored cassettes of benchmarks/examples/native, and prints one table
# row per run: the baselines and the verified candidate's speedup over each.
#   BUILD_DIR  where mblast is (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
mblast=${BUILD_DIR:-build}/mblast
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-8s %-8s %-34s %-14s %s\n' backend problem baselines candidate speedups
for backend in opencl rvv; do
  for stem in swish row_sum softmax matmul conv1d; do
    case "$backend/$stem" in
      opencl/swish) technique=opencl/vector-types ;;
      opencl/matmul | opencl/conv1d) technique=opencl/local-memory-tiling ;;
      opencl/*) technique=opencl/work-group-reduction ;;
      rvv/swish) technique=rvv/vector-math-functions ;;
      rvv/matmul) technique=rvv/register-blocking-matmul ;;
      rvv/conv1d) technique=rvv/strip-mining-vsetvl ;;
      rvv/*) technique=rvv/vector-reductions ;;
    esac
    "$mblast" -q --kb "$work/kb.sqlite" optimize "benchmarks/problems/native/$stem.py" \
      --backend "$backend" --llm "replay:benchmarks/examples/native/$backend.cassette.jsonl" \
      --technique "$technique" --iterations 1 --steps 1 --out "$work/$backend-$stem" --json \
      >"$work/$backend-$stem.json"
    python3 - "$work/$backend-$stem.json" "$backend" "$stem" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
unit = lambda b: f"{b['value']:.4f}ms" if b["unit"] == "ms" else f"{b['value']:.0f}"
base = ", ".join(f"{b['name']} {unit(b)}" for b in r["baselines"])
best = r["best_speedup"]
cand = "-" if best is None else (f"{r['best_ms']:.4f}ms" if r.get("best_ms") else
                                 f"{r['baselines'][0]['value'] / best:.0f}")
# best is over the first (headline) baseline: over another, scale by its value against the first.
ups = ", ".join(f"{best * b['value'] / r['baselines'][0]['value']:.2f}x vs {b['name']}" for b in r["baselines"]) if best else "not correct"
print(f"{sys.argv[2]:<8} {sys.argv[3]:<8} {base:<34} {cand:<14} {ups}")
PY
  done
done
