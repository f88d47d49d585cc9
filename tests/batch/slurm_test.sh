#!/usr/bin/env bash
# Tests scripts/slurm/ against a real Slurm started here on localhost (Debian's munge, slurmctld
# and slurmd, all in a temporary directory, on their own ports): submit.sh runs two tiny problems
# of the project's own as a job array of two shards on the CPU, then the merge job; the test checks
# the merged knowledge base and results, and stops every daemon it started.
# Exits 77 (skipped) when the Slurm or munge daemons are not installed or it does not run as root.
# Run through ctest (MBLAST_BINARY names the binary), or by hand: bash tests/batch/slurm_test.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mblast=${MBLAST_BINARY:-$root/build/mblast}
skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() { echo "ok: $*"; }

export PATH=$PATH:/usr/sbin:/sbin # the daemons
for tool in munged slurmctld slurmd sbatch squeue sinfo scontrol scancel sqlite3; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (apt-get install munge slurmctld slurmd sqlite3)"
done
[[ $(id -u) == 0 ]] || skip "a private Slurm with SlurmUser=root needs root"
[[ -x $mblast ]] || fail "no mblast binary at $mblast (set MBLAST_BINARY)"
command -v python3 >/dev/null || fail "python3 is needed"
SECONDS=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurm_test.XXXXXX")
chmod 755 "$tmp" # munged wants its socket's folder open to all
pids=()
cleanup() {
  local status=$? pid
  set +e
  if [[ -n ${array_job:-} || -n ${merge_job:-} ]]; then
    scancel ${array_job:+"$array_job"} ${merge_job:+"$merge_job"} 2>/dev/null
    for _ in $(seq 1 100); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  # The daemons, newest first, each by its pid.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if ((status != 0 && status != 77)); then
    for f in "$tmp"/log/*.log "$tmp"/out/logs/*; do
      [[ -f $f ]] && { echo "--- $f (tail)"; tail -n 30 "$f"; } >&2
    done
  fi
  rm -rf -- "$tmp"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_for() { # wait_for SECONDS WHAT COMMAND...: polls COMMAND until it succeeds
  local limit=$1 what=$2 start=$SECONDS
  shift 2
  until "$@"; do
    ((SECONDS - start < limit)) || fail "timed out after ${limit}s waiting for $what"
    sleep 0.5
  done
}

# munge, with a key of its own.
mkdir -p "$tmp/munge" "$tmp/sock" "$tmp/state" "$tmp/spool" "$tmp/log"
chmod 700 "$tmp/munge"
chmod 755 "$tmp/sock"
head -c 1024 /dev/urandom >"$tmp/munge/munge.key"
chmod 400 "$tmp/munge/munge.key"
socket=$tmp/sock/munge.socket
munged --foreground --socket="$socket" --key-file="$tmp/munge/munge.key" \
  --log-file="$tmp/log/munged.log" --pid-file="$tmp/munge/munged.pid" \
  --seed-file="$tmp/munge/munged.seed" >"$tmp/log/munged.out" 2>&1 &
pids+=($!)
wait_for 20 munged test -S "$socket"

ctld_port=$(free_port)
slurmd_port=$(free_port)
while [[ $slurmd_port == "$ctld_port" ]]; do slurmd_port=$(free_port); done
: >"$tmp/plugstack.conf"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=mblasttest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=localhost CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -D -c -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { [[ $(sinfo -h -N -o %t 2>/dev/null) == idle ]]; }
wait_for 60 "the node to be idle in sinfo" node_idle
pass "munged, slurmctld and slurmd up, node idle ($SECONDS s)"

# Two tiny problems, two shards, on the CPU: convolutions, so that the CPU's built-ins (channels-last,
# cuDNN autotuning) apply and each shard records attempts.
mkdir -p "$tmp/kb/level1"
cp "$root/tests/problems/conv_small.py" "$tmp/kb/level1/1_conv_a.py"
cp "$root/tests/problems/conv_small.py" "$tmp/kb/level1/2_conv_small.py"
out=$tmp/out
submit=("$root/scripts/slurm/submit.sh" --level 1 --kernelbench "$tmp/kb" --out "$out" --shards 2
  --gpus-per-shard 0 --mblast "$mblast" -- --device cpu --iterations 1 --steps 1 --seeds 2 --runs 3)
ids=$("${submit[@]}") || fail "submit.sh failed"
array_job=$(sed -n 's/^array_job=//p' <<<"$ids")
merge_job=$(sed -n 's/^merge_job=//p' <<<"$ids")
[[ $array_job =~ ^[0-9]+$ && $merge_job =~ ^[0-9]+$ ]] || fail "submit.sh printed: $ids"
pass "submitted array job $array_job and merge job $merge_job ($SECONDS s)"

job_states() { # the states of a job (one per array task)
  scontrol show job "$1" -o 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p'
}
job_ended() {
  local state
  state=$(job_states "$1")
  [[ -n $state && ! $state =~ PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED ]]
}
wait_for 400 "the merge job $merge_job to end" job_ended "$merge_job"
array_states=$(job_states "$array_job" | sort | uniq -c | tr -s ' ')
[[ $array_states == " 2 COMPLETED" ]] || fail "the array's tasks ended as: $array_states"
[[ $(job_states "$merge_job") == COMPLETED ]] || fail "the merge job ended as $(job_states "$merge_job")"
pass "array tasks and merge job completed ($SECONDS s)"

# What the shards and the merge wrote.
for i in 0 1; do
  [[ -s $out/kb-shard-$i.sqlite && -s $out/results-shard-$i.jsonl && -s $out/batch-shard-$i.json ]] ||
    fail "shard $i wrote no KB, results or record"
done
grep -q '"problem":"1_conv_a"' "$out/results-shard-0.jsonl" || fail "shard 0 did not run problem 1"
grep -q '"problem":"2_conv_small"' "$out/results-shard-1.jsonl" || fail "shard 1 did not run problem 2"
[[ $(sqlite3 "$out/kb.sqlite" 'PRAGMA integrity_check') == ok ]] || fail "the merged KB is damaged"
stats=$("$mblast" --kb "$out/kb.sqlite" kb stats --json)
attempts=$("$mblast" --kb "$out/kb.sqlite" kb query --kind attempts --json)
shard0=$("$mblast" --kb "$out/kb-shard-0.sqlite" kb query --kind attempts --json)
shard1=$("$mblast" --kb "$out/kb-shard-1.sqlite" kb query --kind attempts --json)
python3 - "$stats" "$attempts" "$shard0" "$shard1" "$out" <<'PY' || fail "the merged KB or results are not as expected"
import json, os, sys
stats, merged, shard0, shard1 = (json.loads(a) for a in sys.argv[1:5])
out = sys.argv[5]
assert stats["rows"]["runs"] == 2, stats
ids = lambda rows: {r["id"] for r in rows}
assert shard0 and shard1 and ids(shard0) | ids(shard1) == ids(merged), (merged, shard0, shard1)
assert {r["task"] for r in merged} == {"level1/1_conv_a", "level1/2_conv_small"}, merged
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl")) if l.strip()]
assert sorted(r["problem"] for r in rows) == ["1_conv_a", "2_conv_small"], rows
assert all(isinstance(r["correct"], bool) and r["status"] == "finished" for r in rows), rows
batch = json.load(open(os.path.join(out, "batch.json")))
assert batch["level"] == 1 and batch["problems"] == ["1_conv_a", "2_conv_small"], batch
assert [s["problems"] for s in batch["shards"]] == [["1_conv_a"], ["2_conv_small"]], batch
assert batch["slurm"]["array_job"] and batch["slurm"]["merge_job"], batch
PY
if "$mblast" --help | grep -Eq '^[[:space:]]+report([[:space:]]|$)'; then
  [[ -s $out/report.html ]] || fail "mblast has report, but the merge wrote no report.html"
  pass "report.html written"
else
  grep -q 'no report command' "$out"/logs/slurm-merge-"$merge_job".out ||
    fail "the merge log does not say why there is no report"
fi
pass "merged KB holds both shards' attempts; results hold both problems ($SECONDS s)"

# The merge again, by hand: the same outcome.
cp "$out/results.jsonl" "$tmp/results.before"
bash "$root/scripts/slurm/merge.sbatch" --out "$out" --shards 2 --mblast "$mblast" 2>"$tmp/merge.err" ||
  { cat "$tmp/merge.err" >&2; fail "merging again failed"; }
cmp -s "$out/results.jsonl" "$tmp/results.before" || fail "merging again changed results.jsonl"
[[ $("$mblast" --kb "$out/kb.sqlite" kb query --kind attempts --json) == "$attempts" ]] ||
  fail "merging again changed the KB's attempts"
pass "merging again changes nothing ($SECONDS s)"

# The same submission again resumes: both shards skip their ended problem.
ids=$("${submit[@]}") || fail "submit.sh failed the second time"
first_array=$array_job
array_job=$(sed -n 's/^array_job=//p' <<<"$ids")
merge_job=$(sed -n 's/^merge_job=//p' <<<"$ids")
[[ $array_job =~ ^[0-9]+$ && $merge_job =~ ^[0-9]+$ && $array_job != "$first_array" ]] ||
  fail "submit.sh printed: $ids"
wait_for 400 "the second merge job $merge_job to end" job_ended "$merge_job"
[[ $(job_states "$array_job" | sort -u) == COMPLETED && $(job_states "$merge_job") == COMPLETED ]] ||
  fail "the second submission's jobs ended as $(job_states "$array_job") / $(job_states "$merge_job")"
for i in 0 1; do
  grep -q 'skipped, already ended' "$out/logs/slurm-array-${array_job}_$i.out" ||
    fail "shard $i of the second submission did not skip its problem"
done
cmp -s "$out/results.jsonl" "$tmp/results.before" || fail "the second submission changed results.jsonl"
pass "a second submission skips both problems ($SECONDS s)"
echo "PASS slurm_test ($SECONDS s)"
