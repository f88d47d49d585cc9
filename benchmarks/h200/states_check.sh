#!/usr/bin/env bash
# The state classifier checked against Nsight Compute (issue 27, item 3; docs/STATES.md), on the
# GPU machine from the repository root (carry [".device", ".kb"]):
#
#   benchmarks/h200/states_check.sh [LEVELS]        # default "1 2 3"; results under $OUT/states
#
# Per problem of benchmarks/states_check.txt: `mblast eval PROBLEM --candidate PROBLEM --profile
# ncu --json` (the reference judged against itself, profiled with the PyTorch profiler and, for
# the candidate, with Nsight Compute), written to json/<level>_<name>.json; then `mblast kb
# classify` over all of them: the state from the cheap numbers beside the state Nsight Compute
# implies, the table (states_check.md) and its JSON (states_check.json). Problems already judged
# are kept (a second call goes on where a device call's time limit stopped the first). Before the
# problems it records what ncu is and whether it reads counters here (ncu.txt). PER_PROBLEM=S
# bounds one problem (default 240 s); KERNELS=N is the launch limit (eval --ncu-kernels);
# ONLY=N,M judges only those numbers of the list (of each level asked for; an earlier call judged
# the rest, their JSON is not here to skip);
# DEADLINE_S=S starts no problem that might not end S seconds after the script's start (by the
# longest problem so far), so that the table and the archive are always written inside a device
# call's limit (call 111 was cut by its timeout before either). The problems' JSON and logs end
# up in $OUT/states/states.tar.gz alone (json/ and log/ are removed: the device tool returns at
# most 8 files; KEEP=1 keeps them); a later run in the same $OUT unpacks it first and goes on.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
levels=${1:-1 2 3}
out=${OUT:-states-results}/states
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
command -v bwrap >/dev/null || export PATH=$PWD/.device/bin:$PATH
mkdir -p "$out"
if [ -s "$out/states.tar.gz" ] && [ ! -d "$out/json" ]; then
  tar xzf "$out/states.tar.gz" -C "$out"
fi
mkdir -p "$out/json" "$out/log"
t0=$(date +%s)
longest=30
{
  command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu
  ncu --version 2>&1 | tail -2
} >"$out/ncu.txt" 2>&1
for level in $levels; do
  numbers=$(python3 benchmarks/sample_slice.py benchmarks/states_check.txt "$level") || exit 2
  numbers=${numbers//,/ }
  if [ -n "${ONLY:-}" ]; then  # a part of the level's list, the rest judged by an earlier call
    numbers=$(for n in $numbers; do [[ " ${ONLY//,/ } " == *" $n "* ]] && echo "$n"; done)
  fi
  for n in $numbers; do
    problem=$(ls .kb/level"$level"/"$n"_*.py | head -1)
    name=level${level}_$(basename "$problem" .py)
    [ -s "$out/json/$name.json" ] && continue
    start=$(date +%s)
    if [ -n "${DEADLINE_S:-}" ] && (( start - t0 + longest > DEADLINE_S )); then
      echo "states_check.sh: DEADLINE_S=$DEADLINE_S reached; $name and the rest not judged" >&2
      break 2
    fi
    timeout "${PER_PROBLEM:-240}" .device/mblast eval "$problem" --candidate "$problem" \
      --profile=ncu --ncu-kernels "${KERNELS:-200}" --runs 30 --json \
      >"$out/json/$name.tmp" 2>"$out/log/$name.log"
    rc=$?
    if [ -s "$out/json/$name.tmp" ]; then mv "$out/json/$name.tmp" "$out/json/$name.json"; fi
    took=$(($(date +%s) - start))
    (( took > longest )) && longest=$took
    echo "$name: exit $rc, $took s"
  done
done
.device/mblast --kb "$out/kb.sqlite" kb classify "$out"/json/*.json | tee "$out/states_check.md" | tail -3
.device/mblast --kb "$out/kb.sqlite" kb classify --json "$out"/json/*.json >"$out/states_check.json"
# One archive of the problems' JSON and logs: the device tool returns at most 8 files.
if tar czf "$out/states.tar.gz" -C "$out" json log && [ "${KEEP:-0}" != 1 ]; then
  rm -rf "$out/json" "$out/log"
fi
