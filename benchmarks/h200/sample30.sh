#!/usr/bin/env bash
# The stratified 30-problem batch of benchmarks/kernelbench_sample30.txt on the GPU machine, from
# the repository root (carry [".device", ".kb"], made by `benchmarks/h200/acceptance.sh prepare`):
#
#   benchmarks/h200/sample30.sh [LEVELS [GPUS [MAX_EVALS]]]     # defaults: "1 2 3", 0, 8
#
# Per level: `scripts/run_kernelbench.sh` runs `mblast optimize --llm none` on its ten problems,
# one process per GPU, at most MAX_EVALS evaluations each (the reference's included); then
# best_of.py judges the controls (CUDA graph, torch.compile, max-autotune on the reference) of
# the same problems in the same batch directory; then `mblast report` prints the level's table,
# mblast's speedups beside the best-of column, and benchmarks/step_wall.py where the steps' wall went.
# Batches land in $OUT/sample30/levelN, the device's measured ceilings in $OUT/sample30/ceilings.
# Controls a run already judged on the reference are taken from its steps (best_of.py
# --reuse-runs). To fit one device call: ONLY=1,19,23 runs those problems of the level (the rest
# in another call; `benchmarks/merge_batches.py OUT HALF1 HALF2 --mblast mblast` makes one batch of them); TIME_LIMIT=M bounds each
# problem's optimize to M minutes (optimize --time-limit); BEST_OF_TIMEOUT=S bounds the judging of one
# problem's remaining controls to S seconds (best_of.py --timeout, 400 by default); ARM="..." adds
# optimize options, the arms of the model-level optimizer (issue 24): ARM="--graph-first",
# ARM="--regions", ARM="--graph-first --regions" (OUT apart per arm). BUNDLE=DIR runs another bundle
# than .device (issue 27, item 4: BUNDLE=.device-old, a bundle of 3a8e774 with the old state
# catalogue, OUT apart; `mblast report` prints how often the first choice was the winner).
# BEST_OF=0 skips the controls (arms_ab.sh judges two arms of mblast against each other).
# SAMPLE=FILE takes the levels' problems from another list of the same format (issue 24's arms:
# SAMPLE=benchmarks/kernelbench_arms20.txt, 20 of levels 2 and 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
levels=${1:-1 2 3}
gpus=${2:-0}
max_evals=${3:-8}
out=${OUT:-sample30-results}/sample30
bundle=${BUNDLE:-.device}
sample=${SAMPLE:-benchmarks/kernelbench_sample30.txt}
export LD_LIBRARY_PATH=$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
command -v bwrap >/dev/null || export PATH=$PWD/$bundle/bin:$PATH
mkdir -p "$out"
for level in $levels; do
  problems=${ONLY:-$(python3 benchmarks/sample_slice.py "$sample" "$level")} || exit 2
  batch=$out/level$level
  start=$(date +%s)
  # shellcheck disable=SC2086 # ARM holds several options, split on purpose
  scripts/run_kernelbench.sh --level "$level" --kernelbench .kb --problems "$problems" --gpus "$gpus" \
    --out "$batch" --mblast "$bundle/mblast" -- --llm none --iterations 1 --steps "$max_evals" \
    --max-evaluations "$max_evals" ${TIME_LIMIT:+--time-limit "$TIME_LIMIT"} ${ARM:-} >>"$batch.log" 2>&1 || echo "level $level: run_kernelbench.sh exit $?"
  [ "${BEST_OF:-1}" = 0 ] || python3 benchmarks/h200/best_of.py --kernelbench .kb --level "$level" --problems "$problems" \
    --out "$batch" --mblast "$bundle/mblast" --gpus "$gpus" --reuse-runs \
    ${BEST_OF_TIMEOUT:+--timeout "$BEST_OF_TIMEOUT"} >>"$batch.log" 2>&1 || echo "level $level: best_of.py exit $?"
  echo "level $level: $(($(date +%s) - start)) s"
  "$bundle/mblast" report "$batch" --json >"$batch/report.json" || true
  "$bundle/mblast" report "$batch" | tee "$batch/report.md" | sed -n '1,60p'
  python3 benchmarks/step_wall.py "$batch" >"$batch/step_wall.md" && tail -1 "$batch/step_wall.md"
done
# The device's ceilings as the judge measured them on this machine (cached once per machine), kept
# with the batch: the figures the speed-of-light fractions were computed against.
mkdir -p "$out/ceilings"
cp "${XDG_CACHE_HOME:-$HOME/.cache}"/mblast/ceilings/*.json "$out/ceilings/" 2>/dev/null || true
