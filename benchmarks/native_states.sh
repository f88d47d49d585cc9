#!/usr/bin/env bash
# The states the classifier finds on the five native problems, for OpenCL (PoCL on this CPU) and
# RVV (QEMU, cost model): `mblast optimize` with the authored cassettes of
# benchmarks/examples/native for two steps, so that step 1 is classified on the baseline's
# signature (the naive OpenCL kernel; the better C build on RVV) and step 2 on the optimized
# kernel's, which step 1 accepted. Prints one row per step with its state and evidence, then
# `mblast report` of all the runs (its "States" table).
#   BUILD_DIR  where mblast is (default build)
#   KEEP_DIR   keep the runs there instead of a temporary folder
set -euo pipefail
cd "$(dirname "$0")/.."
mblast=${BUILD_DIR:-build}/mblast
work=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP_DIR:-} ]] || trap 'rm -rf "$work"' EXIT

for backend in opencl rvv; do
  for stem in softmax swish row_sum matmul conv1d; do
    case "$backend/$stem" in
      opencl/swish) technique=opencl/vector-types ;;
      opencl/matmul | opencl/conv1d) technique=opencl/local-memory-tiling ;;
      opencl/*) technique=opencl/work-group-reduction ;;
      rvv/swish) technique=rvv/vector-math-functions ;;
      rvv/matmul) technique=rvv/register-blocking-matmul ;;
      rvv/conv1d) technique=rvv/strip-mining-vsetvl ;;
      rvv/*) technique=rvv/vector-reductions ;;
    esac
    # Step 2 runs a built-in on the kernel step 1 accepted (the cassette answers once).
    builtin=$([[ $backend == opencl ]] && echo opencl/builtin-workgroup-sweep || echo rvv/builtin-lmul)
    "$mblast" -q --kb "$work/kb.sqlite" optimize "benchmarks/problems/native/$stem.py" \
      --backend "$backend" --llm "replay:benchmarks/examples/native/$backend.cassette.jsonl" \
      --technique "$technique" --technique "$builtin" --iterations 1 --steps 2 \
      --out "$work/$backend-$stem" --json >"$work/$backend-$stem.json"
  done
done

python3 - "$work" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
print(f"{'backend':<7} {'problem':<8} {'step':<4} {'signature of':<13} {'state':<28} evidence")
for backend in ("opencl", "rvv"):
    for stem in ("softmax", "swish", "row_sum", "matmul", "conv1d"):
        for line in (work / f"{backend}-{stem}" / "steps.jsonl").read_text().splitlines():
            step = json.loads(line)
            of = "baseline" if step["global_step"] == 1 else "optimized"
            print(f"{backend:<7} {stem:<8} {step['global_step']:<4} {of:<13} {step['state']:<28} "
                  f"{step['state_evidence']}")
PY
mkdir -p "$work/all/runs"
for run in "$work"/opencl-* "$work"/rvv-*; do
  [[ -d $run ]] && ln -sfn "$run" "$work/all/runs/$(basename "$run")"
done
"$mblast" report "$work/all" | sed -n '/^## States/,/^## Techniques/p' | sed '$d'
