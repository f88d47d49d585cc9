#!/usr/bin/env bash
# Tests benchmarks/transfer.sh on the CPU with the project's tiny problems: one training problem,
# one test problem run warm and cold, the warm run's KB a copy of the trained one, the cold one's
# empty; a second call keeps what ended; --prior-kb skips training; bad input exits 2.
# Run through ctest (MBLAST_BINARY names the binary), or by hand: bash tests/batch/transfer_test.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mblast=${MBLAST_BINARY:-$root/build/mblast}
script=$root/benchmarks/transfer.sh
[[ -x $mblast ]] || { echo "FAIL: no mblast binary at $mblast (set MBLAST_BINARY)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/transfer_test.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

printf '# a comment\ntrain conv_small.py\ntest relu_small.py\n' >"$tmp/split.txt"
flags=(-- --device cpu --steps 2 --seeds 2 --runs 3)
run() { # run ARGS...: sets rc, output in $tmp/stdout and $tmp/stderr
  rc=0
  "$script" --mblast "$mblast" --root "$root/tests/problems" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
}
attempts() { # attempts KB: how many attempts the KB holds
  python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from attempts").fetchone()[0])' "$1"
}

run --split "$tmp/split.txt" --out "$tmp/out" "${flags[@]}"
[[ $rc == 0 ]] || { cat "$tmp/stderr" >&2; fail "the benchmark exited $rc"; }
for f in train/runs/conv_small/run.json warm/runs/relu_small/run.json cold/runs/relu_small/run.json \
  report.md report.json report.html settings.txt; do
  [[ -f $tmp/out/$f ]] || fail "no $f"
done
trained=$(attempts "$tmp/out/train/kb.sqlite")
((trained >= 1)) || fail "training wrote no attempt"
# Each side's KB holds what it started from plus the test run's own attempts.
warm=$(attempts "$tmp/out/warm/kbs/relu_small.sqlite")
cold=$(attempts "$tmp/out/cold/kbs/relu_small.sqlite")
steps() { # steps RUN_DIR: how many steps the run recorded (none where no technique applied)
  python3 -c 'import os,sys; p=sys.argv[1]; print(sum(1 for l in open(p) if l.strip()) if os.path.exists(p) else 0)' "$1/steps.jsonl"
}
cold_steps=$(steps "$tmp/out/cold/runs/relu_small")
warm_steps=$(steps "$tmp/out/warm/runs/relu_small")
((cold == cold_steps)) || fail "the cold KB holds $cold attempts, its run made $cold_steps"
((warm == trained + warm_steps)) || fail "the warm KB holds $warm attempts: training $trained, its run $warm_steps"
python3 - "$tmp/out/report.json" <<'PY' || fail "report.json has no comparison of the test problem"
import json, sys
c = json.load(open(sys.argv[1]))["comparison"]
assert [p["task"] for p in c["problems"]] == ["problems/relu_small"], c["problems"]
assert c["groups"][-1]["group"] == "all", c["groups"]
assert c["problems"][0]["this"]["correct"] and c["problems"][0]["against"]["correct"]
PY
grep -q '^## Against' "$tmp/stdout" || fail "the comparison was not printed"
pass "train, warm and cold runs, their KBs and the report"

before=$(stat -c %Y "$tmp/out/warm/runs/relu_small/run.json")
run --split "$tmp/split.txt" --out "$tmp/out" "${flags[@]}"
[[ $rc == 0 ]] || fail "the second call exited $rc"
grep -q 'ended before, kept' "$tmp/stderr" || fail "the second call did not keep the ended runs"
[[ $(stat -c %Y "$tmp/out/warm/runs/relu_small/run.json") == "$before" ]] || fail "an ended run was redone"
pass "a second call keeps what ended"

run --split "$tmp/split.txt" --out "$tmp/prior" --prior-kb "$tmp/out/train/kb.sqlite" "${flags[@]}"
[[ $rc == 0 ]] || { cat "$tmp/stderr" >&2; fail "--prior-kb exited $rc"; }
[[ ! -d $tmp/prior/train ]] || fail "--prior-kb still trained"
prior=$(attempts "$tmp/prior/warm/kbs/relu_small.sqlite")
((prior == trained + $(steps "$tmp/prior/warm/runs/relu_small"))) || fail "--prior-kb was not copied"
pass "--prior-kb starts the warm runs from that KB"

# SIGTERM (a device call's timeout) stops the benchmark with 143; the same command continues it.
"$script" --mblast "$mblast" --root "$root/tests/problems" --split "$tmp/split.txt" --out "$tmp/stopped" \
  "${flags[@]}" >"$tmp/stdout" 2>"$tmp/stderr" &
benchmark=$!
sleep 2
kill -TERM "$benchmark"
rc=0
wait "$benchmark" || rc=$?
[[ $rc == 143 ]] || fail "SIGTERM: exit $rc, expected 143"
grep -q 'run the same command again' "$tmp/stderr" || fail "SIGTERM: no hint to continue"
run --split "$tmp/split.txt" --out "$tmp/stopped" "${flags[@]}"
[[ $rc == 0 ]] || { cat "$tmp/stderr" >&2; fail "the call after SIGTERM exited $rc"; }
for side in warm cold; do
  grep -q '"status": *"interrupted"' "$tmp/stopped/$side/runs/relu_small/run.json" && fail "$side ended interrupted"
done
pass "SIGTERM stops it, the same command continues"

printf 'train relu_small.py\ntest relu_small.py\n' >"$tmp/overlap.txt"
printf 'train conv_small.py\n' >"$tmp/notest.txt"
printf 'test missing_problem.py\n' >"$tmp/missing.txt"
for bad in "--split $tmp/overlap.txt" "--split $tmp/notest.txt" "--split $tmp/missing.txt" \
  "--split $tmp/split.txt --prior-kb $tmp/none.sqlite" "--split $tmp/split.txt --phase sideways" \
  "--split $tmp/split.txt -- --kb x.sqlite"; do
  # shellcheck disable=SC2086  # the words of each case
  run $bad --out "$tmp/bad"
  [[ $rc == 2 ]] || fail "'$bad' exited $rc, expected 2"
  grep -q '^fix: ' "$tmp/stderr" || fail "'$bad' gave no fix"
done
pass "bad input exits 2 with a fix"
