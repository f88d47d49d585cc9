#!/usr/bin/env bash
# Region built-ins on the GPU (issue 24): for each problem, its region windows as `mblast regions`
# measures them there, then one `mblast optimize --regions` run whose whole-model and region steps
# use the same built-ins (default: the default compile and cuDNN autotuning), so each region's
# candidate is judged beside the whole model's in one run, over the same eager. On the GPU machine,
# from the repository root, carry [".device", ".kb"]:
#
#   OUT=DIR benchmarks/h200/regions_probe.sh [PROBLEM.py ...]     # default: four of level 3
#
# Environment: STEPS (6), MINUTES per run (1.2), TECHNIQUES (space-separated ids). Prints one line
# per step (slot, technique, speedup) and packs the run folders into DIR/regions.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.device/lib
command -v bwrap >/dev/null || export PATH=$PWD/.device/bin:$PATH
problems=("$@")
[ ${#problems[@]} -gt 0 ] || problems=(.kb/level3/4_LeNet5.py .kb/level3/8_ResNetBasicBlock.py
  .kb/level3/17_SqueezeNetFireModule.py .kb/level3/19_MobileNetV1.py)
techniques=()
for t in ${TECHNIQUES:-cuda/builtin-torch-compile cuda/builtin-cudnn-benchmark}; do
  techniques+=(--technique "$t")
done
work=$(mktemp -d)
limit=$(awk -v m="${MINUTES:-1.2}" 'BEGIN { print int(m * 60) + 150 }')
for p in "${problems[@]}"; do
  name=$(basename "$p" .py)
  timeout 120 .device/mblast regions "$p" --device cuda --json >"$work/$name.regions.json" 2>"$work/$name.regions.err"
  timeout "$limit" .device/mblast optimize "$p" --llm none --regions \
    "${techniques[@]}" --iterations 1 --steps "${STEPS:-6}" --time-limit "${MINUTES:-1.2}" \
    --kb "$work/kb.sqlite" --out "$work/$name" >"$work/$name.log" 2>&1
  echo "== $name ($(grep -c . "$work/$name/steps.jsonl" 2>/dev/null || echo 0) steps)"
  python3 - "$work/$name" <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
config = json.loads((run / "config.json").read_text()) if (run / "config.json").is_file() else {}
regions = config.get("regions", {})
print("   regions:", "captured" if regions.get("captured") else "not captured: " + str(regions.get("failure")),
      ", ".join(f"{'..'.join(w['ops'][::max(1, len(w['ops']) - 1)])} {w['share']:.0%}" for w in regions.get("windows", [])))
steps = run / "steps.jsonl"
for line in (steps.read_text().splitlines() if steps.is_file() else []):
    s = json.loads(line)
    sp = s.get("speedup")
    print(f"   {s.get('global_step')} {s.get('slot')} {s.get('technique')} {s.get('outcome')} "
          f"{'%.3fx' % sp if sp else '-'} eager {s.get('eager_ms')}")
PY
done
tar czf "$OUT/regions.tgz" -C "$work" .
