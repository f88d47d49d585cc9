#!/usr/bin/env bash
# Two arms of `mblast optimize` on the same problems of one machine, interleaved problem by problem
# (A then B, then B then A, ...) so that neither arm always runs first on a warm GPU, and each arm
# with its own cache folder (XDG_CACHE_HOME) so that one arm's compiled artifacts never speed up
# the other's steps. From the repository root of the GPU machine (carry [".device", ".kb"]):
#
#   ONLY=1,4,8 [TIME_LIMIT=M] [ARM_A=...] [ARM_B=...] OUT=DIR benchmarks/h200/arms_ab.sh LEVEL [MAX_EVALS]
#
# Without ONLY, the level's line of benchmarks/kernelbench_arms20.txt (issue 24's stratified 20;
# SAMPLE=FILE for another list): twenty problems, two arms, more than one device call holds, so
# PART=K/N runs the K-th of N slices of it (PART=1/4: its first five) into the same OUT.
# ARM_A defaults to no option, ARM_B to --prebuild (issue 21). Each run is sample30.sh with
# BEST_OF=0; the batches land in $OUT/a and $OUT/b. At the end, `mblast report B --against A`
# (b-against-a.md, its "Against" section printed) sets evaluations to near-best, final bests and
# wall side by side, each arm's benchmarks/step_wall.py table lands beside its batch, and with
# --prebuild in arm b, benchmarks/prebuild_guesses.py matches each guess to its step.
set -euo pipefail
cd "$(dirname "$0")/../.."
level=${1:?usage: ONLY=1,4,8 OUT=DIR benchmarks/h200/arms_ab.sh LEVEL [MAX_EVALS]}
max_evals=${2:-8}
sample=${SAMPLE:-benchmarks/kernelbench_arms20.txt}
if [ -z "${ONLY:-}" ]; then
  ONLY=$(python3 benchmarks/sample_slice.py "$sample" "$level" "${PART:-1/1}") ||
    { echo "arms_ab.sh: set ONLY to the problems' numbers (e.g. ONLY=1,4,8), or PART=K/N of $sample's level $level" >&2; exit 2; }
fi
out=${OUT:?arms_ab.sh: set OUT to a folder for both arms}
arm_a=${ARM_A:-}
arm_b=${ARM_B:---prebuild}
bundle=${BUNDLE:-.device}
mkdir -p "$out/a" "$out/b"
out=$(cd "$out" && pwd)

run_arm() {  # run_arm a|b PROBLEM
  local name=$1 problem=$2 arm
  [ "$name" = a ] && arm=$arm_a || arm=$arm_b
  local start
  start=$(date +%s)
  XDG_CACHE_HOME=$out/cache-$name OUT=$out/$name ONLY=$problem BEST_OF=0 ARM=$arm \
    benchmarks/h200/sample30.sh "$level" 0 "$max_evals" >"$out/$name/problem-$problem.log" 2>&1 ||
    echo "arm $name, problem $problem: sample30.sh exit $?"
  echo "arm $name ($arm): problem $problem in $(($(date +%s) - start)) s"
}

order=0
for problem in ${ONLY//,/ }; do
  if [ $((order % 2)) = 0 ]; then run_arm a "$problem"; run_arm b "$problem"
  else run_arm b "$problem"; run_arm a "$problem"; fi
  order=$((order + 1))
done

batch_a=$out/a/sample30/level$level
batch_b=$out/b/sample30/level$level
export LD_LIBRARY_PATH=$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for name in a b; do
  batch=$out/$name/sample30/level$level
  python3 benchmarks/step_wall.py "$batch" >"$batch/step_wall.md" || true
done
"$bundle/mblast" report "$batch_b" --against "$batch_a" >"$out/b-against-a.md" || true
sed -n '/^## Against/,$p' "$out/b-against-a.md" | sed -n '1,20p'
if [[ " $arm_b " == *" --prebuild "* ]]; then
  python3 benchmarks/prebuild_guesses.py "$batch_b" "$batch_a" >"$out/prebuild-guesses.md" && tail -1 "$out/prebuild-guesses.md"
fi
# Each arm's compile caches only kept the arms apart, and they hold every compiled artifact (call
# 121's archive of $OUT, caches included, was over the 16 MiB a device call returns).
[ "${KEEP_CACHES:-0}" = 1 ] || rm -rf "$out/cache-a" "$out/cache-b"
