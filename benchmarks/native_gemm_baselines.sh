#!/usr/bin/env bash
# The OpenCL baselines of GEMM-shaped problems on this machine's OpenCL device: PyTorch eager on the
# CPU (torch_cpu, with its thread count), CLBlast on the device (clblast), the project's naive
# kernel where there is one (naive_opencl) and the hand-written candidate where there is one, for
# benchmarks/problems/native/matmul.py and KernelBench level-1 problems 1-18 at --shrink 65536
# (those whose forward is not one GEMM say why). Each problem is judged REPEATS times, each time
# with a fresh bundle cache (so PyTorch's time is measured afresh too); the table gives per column
# the median and the range over the repeats, and the headline each repeat chose.
#   benchmarks/native_gemm_baselines.sh KERNELBENCH/level1
#   BUILD_DIR  where mblast is (default build); REPEATS (default 3); RUNS timed runs (default 30)
set -euo pipefail
if [[ $# -ne 1 || ! -d $1 ]]; then
  echo "usage: $0 KERNELBENCH/level1 (the folder of KernelBench's level-1 problems)" >&2
  exit 2
fi
level1=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
mblast=$(pwd)/${BUILD_DIR:-build}/mblast
repeats=${REPEATS:-3}
runs=${RUNS:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One judgement: `mblast eval` of the candidate when there is one, else `mblast optimize` with no
# LLM for one step, which measures the baselines alone.
judge() {
  local out=$1 problem=$2 candidate=$3
  shift 3
  if [[ -n $candidate ]]; then
    "$mblast" -q eval "$problem" --backend opencl --candidate "$candidate" --runs "$runs" "$@" \
      --json >"$out" || true
  else
    "$mblast" -q --kb "$work/kb.sqlite" optimize "$problem" --backend opencl --llm none \
      --iterations 1 --steps 1 --runs "$runs" --out "$out.run" "$@" --json >"$out" || true
  fi
}

problems=("native/matmul")
for file in "$level1"/{1..18}_*.py; do problems+=("$(basename "$file" .py)"); done

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= repeats; r++)); do
  for p in "${problems[@]}"; do
    out="$work/r$r-${p//\//_}.json"
    if [[ $p == native/matmul ]]; then
      judge "$out" benchmarks/problems/native/matmul.py benchmarks/examples/native/matmul.opt.cl \
        --cache-dir "$work/cache-$r"
    else
      candidate=benchmarks/examples/kernelbench/level1/$p.opt.cl
      [[ -f $candidate ]] || candidate=
      judge "$out" "$level1/$p.py" "$candidate" --shrink 65536 \
        --baselines benchmarks/examples/kernelbench/level1 --cache-dir "$work/cache-$r"
    fi
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$repeats" "${problems[@]}" <<'PY'
import json, re, statistics, sys
from pathlib import Path

work, repeats, problems = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]

def spread(values):
    if not values:
        return "-"
    mid = statistics.median(values)
    return f"{mid:.4f}" if len(values) == 1 else f"{mid:.4f} [{min(values):.4f}-{max(values):.4f}]"

print("\n| problem | sizes | torch_cpu ms (threads) | clblast ms | naive_opencl ms | candidate ms | headline (per repeat) | why no clblast |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for p in problems:
    cols = {"torch_cpu": [], "clblast": [], "naive_opencl": [], "candidate": []}
    heads, threads, why, sizes = [], set(), "", "full"
    for r in range(1, repeats + 1):
        path = work / f"r{r}-{p.replace('/', '_')}.json"
        try:
            res = json.loads(path.read_text())
        except (OSError, ValueError):
            heads.append("failed")
            continue
        for b in res.get("baselines", []):
            cols.setdefault(b["name"], []).append(b["value"])
            m = re.search(r"(\d+) threads", b.get("detail", ""))
            if m:
                threads.add(m.group(1))
        cand = res.get("cand_ms") if "cand_ms" in res else res.get("best_ms")
        if cand and res.get("correct", True):
            cols["candidate"].append(cand)
        heads.append(res.get("speedup_baseline") or "-")
        for line in res.get("missing_baselines", []):
            if line.startswith("clblast:"):
                why = line[len("clblast: "):]
        if res.get("shrink"):
            sizes = f"/{res['shrink']['factor']}"
    torch = spread(cols["torch_cpu"]) + (f" ({','.join(sorted(threads))})" if threads else "")
    print(f"| {p} | {sizes} | {torch} | {spread(cols['clblast'])} | {spread(cols['naive_opencl'])} | "
          f"{spread(cols['candidate'])} | {', '.join(heads)} | {why[:90]} |")
PY
