#!/usr/bin/env bash
# The judge's acceptance run on the GPU machine, from the repository root:
#
#   benchmarks/h200/acceptance.sh prepare            # here: build, bundle, copy KernelBench into .kb/
#   benchmarks/h200/acceptance.sh a|b|c|d|e|f|g|h|i|j|k|all [DEADLINE [ONLY]]  # there, carry [".device", ".kb"]
#
# Part a (env, first-vs-later, agreement with KernelBench's harness, spread, anti-cheat, isolation,
# latency), part b (fairness and memory over every level 1-3 problem) and part c (what part a
# leaves after fixes: isolation, agreement, latency, the fingerprint caches) each fit one call;
# part e looks for causes (memory per phase, nvidia-smi sampling against host-bound timing,
# KernelBench's harness one problem per process, the CUDA-only tests) and part f checks the
# fixes that followed (memory and noise again, then fairness), part g what f left and the
# host-bound models again; part h the CUDA-only tests and fairness after call 11's fixes, part i
# the isolation, anti-cheat, latency and agreement tables of the same code, part j the compiled
# built-ins against the same files in plain processes (builtins_vs_plain.py), part k the
# agreement and fairness sections that part a's deadline leaves after a change to the timer;
# DEADLINE (seconds, default 540) bounds what starts; ONLY names a file of problems (level1/NAME
# per line) that the fairness section judges instead of all (benchmarks/h200/fairness_first.txt:
# the memory-heavy level-1 problems and level1/40_LayerNorm, the usual choice for part a). Results
# land in $OUT/acceptance (results.json, table.md, log.txt, records.tar.gz); the table is printed
# last.
set -euo pipefail
cd "$(dirname "$0")/../.."
part=${1:-}
case "$part" in
  prepare)
    bash scripts/setup.sh >/dev/null
    bash scripts/device_bundle.sh .device >/dev/null
    rm -rf .kb && mkdir -p .kb
    cp -r ../shared/kernelbench/level1 ../shared/kernelbench/level2 ../shared/kernelbench/level3 .kb/
    cp -r ../shared/kernelbench_harness .kb/harness
    # SOL-ExecBench's examples and harness, for sol_examples.sh (issue 25)
    cp -r ../shared/sol_execbench/examples .kb/sol_examples
    cp -r ../shared/sol_execbench/src .kb/sol_src
    exclude=$(git rev-parse --git-dir)/info/exclude  # a fresh checkout may lack info/
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.kb/' "$exclude" 2>/dev/null || echo /.kb/ >>"$exclude"
    du -sh .device .kb
    exit 0
    ;;
  a|b|c|d|e|f|g|h|i|j|k|all|before) ;;
  *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
out=${OUT:-acceptance-results}/acceptance
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
command -v bwrap >/dev/null || export PATH=$PWD/.device/bin:$PATH  # the bundled bubblewrap
export PYTHONUNBUFFERED=1
python3 benchmarks/h200/acceptance.py --kernelbench .kb --harness .kb/harness --out "$out" \
  --mblast .device/mblast --part "$part" --deadline "${2:-540}" ${3:+--only "$3"} 2>&1 |
  tee -a "$out/log.txt"
