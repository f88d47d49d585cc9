#!/usr/bin/env bash
# Tests scripts/run_kernelbench.sh on two tiny problems of the project's own, on the CPU:
# a batch over two GPU slots, a second run that skips everything, the resume of a run whose
# run.json is gone and of a batch stopped by SIGTERM, a failing problem, and bad usage.
# Run through ctest (MBLAST_BINARY names the binary), or by hand: bash tests/batch/run_kernelbench_test.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mblast=${MBLAST_BINARY:-$root/build/mblast}
script=$root/scripts/run_kernelbench.sh
[[ -x $mblast ]] || { echo "FAIL: no mblast binary at $mblast (set MBLAST_BINARY)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 is needed" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run_kernelbench_test.XXXXXX")
batch_pid=""
cleanup() {
  if [[ -n $batch_pid ]]; then kill -TERM "$batch_pid" 2>/dev/null || true; wait "$batch_pid" 2>/dev/null || true; fi
  rm -rf -- "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() { echo "ok: $*"; }
SECONDS=0

mkdir -p "$tmp/kb/level1"
cp "$root/tests/problems/relu_small.py" "$tmp/kb/level1/1_relu_small.py"
cp "$root/tests/problems/conv_small.py" "$tmp/kb/level1/2_conv_small.py"
flags=(-- --device cpu --iterations 1 --steps 1 --seeds 2 --runs 3)
out=$tmp/out

batch() { # batch ARGS...: runs the script, stderr in $tmp/stderr; sets rc
  rc=0
  "$script" --mblast "$mblast" "$@" 2>"$tmp/stderr" >"$tmp/stdout" || rc=$?
}
expect_rc() { # expect_rc STATUS WHAT
  if [[ $rc != "$1" ]]; then
    cat "$tmp/stderr" >&2
    fail "$2: exit status $rc, expected $1"
  fi
}
expect_stderr() { # expect_stderr FIXED_TEXT WHAT
  grep -qF -- "$1" "$tmp/stderr" || { cat "$tmp/stderr" >&2; fail "$2: no '$1' on stderr"; }
}
# check_results FILE PROBLEMS...: one line per problem, each the run.json of its run with
# "problem", "correct" (bool) and "best_speedup".
check_results() {
  local file=$1
  shift
  python3 - "$file" "$@" <<'PY' || fail "$file is not as expected"
import json, os, sys
path, want = sys.argv[1], sys.argv[2:]
rows = [json.loads(l) for l in open(path) if l.strip()]
names = [r["problem"] for r in rows]
assert sorted(names) == sorted(want), "problems %s, expected %s" % (names, want)
for r in rows:
    assert isinstance(r["correct"], bool), r
    assert "best_speedup" in r and r["level"] == 1 and r["status"] != "interrupted", r
    run = json.load(open(os.path.join(os.path.dirname(path), "runs", r["problem"], "run.json")))
    assert run["run_id"] == r["run_id"] and run["problem"] == r["problem_file"], r
PY
}

# 1. A batch over both problems on two "GPUs" (the runs use the CPU; CUDA_VISIBLE_DEVICES is set).
batch --level 1 --kernelbench "$tmp/kb" --out "$out" --gpus 0,1 "${flags[@]}"
expect_rc 0 "first batch"
check_results "$out/results.jsonl" 1_relu_small 2_conv_small
for stem in 1_relu_small 2_conv_small; do
  [[ -f $out/runs/$stem/run.json && -s $out/logs/$stem.log ]] || fail "no run.json or log for $stem"
done
expect_stderr "[1/2] 1_relu_small on GPU 0: done" "first batch"
expect_stderr "[2/2] 2_conv_small on GPU 1: done" "first batch"
grep -qF "starting: env CUDA_VISIBLE_DEVICES=1 " "$out/logs/2_conv_small.log" ||
  fail "2_conv_small did not run with CUDA_VISIBLE_DEVICES=1"
python3 - "$out/batch.json" "$tmp/kb" <<'PY' || fail "batch.json is not as expected"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["level"] == 1 and b["kernelbench"] == sys.argv[2], b
assert b["problems"] == ["1_relu_small", "2_conv_small"] and b["gpus"] == ["0", "1"], b
assert b["flags"][:2] == ["--device", "cpu"] and b["started_at"] and b["mblast_version"].startswith("mblast"), b
PY
runs=$("$mblast" --kb "$out/kb.sqlite" kb query --kind runs --json |
  python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[[ $runs == 2 ]] || fail "the shared KB holds $runs runs, expected 2"
pass "first batch: 2 problems on 2 slots, one KB ($SECONDS s)"

# 2. The same command again: nothing runs, nothing changes.
cp "$out/results.jsonl" "$tmp/results.before"
headers_before=$(cat "$out"/logs/*.log | grep -c '^=== ')
batch --level 1 --kernelbench "$tmp/kb" --out "$out" "${flags[@]}"
expect_rc 0 "second batch"
cmp -s "$out/results.jsonl" "$tmp/results.before" || fail "the second batch changed results.jsonl"
[[ $(grep -c 'skipped, already ended' "$tmp/stderr") == 2 ]] || { cat "$tmp/stderr" >&2; fail "not both skipped"; }
[[ $(cat "$out"/logs/*.log | grep -c '^=== ') == "$headers_before" ]] || fail "the second batch ran mblast"
pass "second batch: both skipped, results unchanged ($SECONDS s)"

# 3. A run whose run.json is gone (the batch was killed while it ran): continued with --resume,
#    without evaluating again, and its line comes back once.
evaluations=$(wc -l <"$out/runs/2_conv_small/evaluations.jsonl")
rm "$out/runs/2_conv_small/run.json"
grep -v '"problem":"2_conv_small"' "$tmp/results.before" >"$out/results.jsonl"
batch --level 1 --kernelbench "$tmp/kb" --out "$out" "${flags[@]}"
expect_rc 0 "batch after a lost run.json"
expect_stderr "[2/2] 2_conv_small: resuming" "batch after a lost run.json"
expect_stderr "[1/2] 1_relu_small: skipped" "batch after a lost run.json"
grep -qF "resuming: $mblast --kb $out/kb.sqlite optimize --resume $out/runs/2_conv_small" \
  "$out/logs/2_conv_small.log" || fail "2_conv_small was not continued with --resume"
[[ $(wc -l <"$out/runs/2_conv_small/evaluations.jsonl") == "$evaluations" ]] ||
  fail "the resumed run evaluated again"
check_results "$out/results.jsonl" 1_relu_small 2_conv_small
pass "lost run.json: resumed, no evaluation repeated ($SECONDS s)"

# 4. SIGTERM while a run is going: the batch stops (143) after the current step, records nothing
#    for the stopped run, and the same command continues it.
out2=$tmp/out2
long=(-- --device cpu --iterations 1 --steps 3 --seeds 2 --runs 3)
"$script" --mblast "$mblast" --level 1 --kernelbench "$tmp/kb" --out "$out2" "${long[@]}" \
  2>"$tmp/stderr" >/dev/null &
batch_pid=$!
for _ in $(seq 1 600); do
  [[ -f $out2/runs/1_relu_small/config.json ]] && break
  kill -0 "$batch_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -f $out2/runs/1_relu_small/config.json ]] || fail "the batch did not start 1_relu_small"
kill -TERM "$batch_pid"
rc=0
wait "$batch_pid" || rc=$?
batch_pid=""
expect_rc 143 "batch stopped by SIGTERM"
expect_stderr "1_relu_small: interrupted" "batch stopped by SIGTERM"
[[ ! -s $out2/results.jsonl ]] || fail "a stopped batch recorded a result: $(cat "$out2/results.jsonl")"
[[ ! -e $out2/runs/2_conv_small ]] || fail "the stopped batch started 2_conv_small"
batch --level 1 --kernelbench "$tmp/kb" --out "$out2" "${long[@]}"
expect_rc 0 "batch after SIGTERM"
expect_stderr "[1/2] 1_relu_small: resuming" "batch after SIGTERM"
expect_stderr "[2/2] 2_conv_small: starting" "batch after SIGTERM"
check_results "$out2/results.jsonl" 1_relu_small 2_conv_small
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["status"] in ("finished", "exhausted"), r' \
  "$out2/runs/1_relu_small/run.json" || fail "the resumed run did not end"
pass "SIGTERM: stopped with 143, then resumed ($SECONDS s)"

# 5. A failing problem does not stop the batch; the batch then exits 1.
mkdir -p "$tmp/kb2/level1"
cp "$root/tests/problems/broken_syntax.py" "$tmp/kb2/level1/1_broken.py"
cp "$root/tests/problems/relu_small.py" "$tmp/kb2/level1/2_relu_small.py"
batch --level 1 --kernelbench "$tmp/kb2" --out "$tmp/out3" "${flags[@]}"
expect_rc 1 "batch with a broken problem"
expect_stderr "[1/2] 1_broken: failed (exit 2)" "batch with a broken problem"
expect_stderr "[2/2] 2_relu_small: done" "batch with a broken problem"
[[ $(wc -l <"$tmp/out3/results.jsonl") == 1 ]] || fail "results of the batch with a broken problem"
pass "a failing problem: the batch goes on and exits 1 ($SECONDS s)"

# 6. Problem selection and bad usage.
printf '1_a.py\n2_b.py\n3_c.py\n10_d.py\n15_e.py\nnotes.py\n' | while read -r f; do
  mkdir -p "$tmp/sel/KernelBench/level2" && : >"$tmp/sel/KernelBench/level2/$f"
done
batch --level 2 --kernelbench "$tmp/sel" --problems 2-10,15 --list
expect_rc 0 "--list"
[[ $(sed 's|.*/||' "$tmp/stdout" | tr '\n' ' ') == "2_b.py 3_c.py 10_d.py 15_e.py " ]] ||
  fail "--problems 2-10,15 selected $(tr '\n' ' ' <"$tmp/stdout")"
batch --level 2 --kernelbench "$tmp/sel" --shard 1/2 --list
[[ $(sed 's|.*/||' "$tmp/stdout" | tr '\n' ' ') == "2_b.py 10_d.py " ]] ||
  fail "--shard 1/2 selected $(tr '\n' ' ' <"$tmp/stdout")"
batch --help
expect_rc 0 "--help"
grep -q -- '--problems SPEC' "$tmp/stdout" || fail "--help does not explain --problems"
bad_usage=(
  ""
  "--level 1"
  "--kernelbench $tmp/kb"
  "--level x --kernelbench $tmp/kb"
  "--level 1 --kernelbench $tmp/nowhere"
  "--level 3 --kernelbench $tmp/kb"
  "--level 1 --kernelbench $tmp/kb --problems 1-x"
  "--level 1 --kernelbench $tmp/kb --problems 7"
  "--level 1 --kernelbench $tmp/kb --problems 5-9"
  "--level 1 --kernelbench $tmp/kb --gpus 0,0"
  "--level 1 --kernelbench $tmp/kb --shard 2/2"
  "--level 1 --kernelbench $tmp/kb --frobnicate"
  "--level 1 --kernelbench $tmp/kb --out"
  "--level 1 --kernelbench $tmp/kb -- --out elsewhere"
  "--level 1 --kernelbench $tmp/kb --mblast $tmp/nowhere"
  "--level 2 --kernelbench $tmp/sel --out $out"
)
for args in "${bad_usage[@]}"; do
  read -r -a argv <<<"$args"
  batch "${argv[@]+"${argv[@]}"}"
  expect_rc 2 "bad usage '$args'"
  grep -q 'error: ' "$tmp/stderr" || fail "bad usage '$args' printed no error"
done
cmp -s "$out/results.jsonl" <(grep . "$out/results.jsonl") || fail "results.jsonl has blank lines"
pass "selection, --help and ${#bad_usage[@]} bad usages (exit 2) ($SECONDS s)"
echo "PASS run_kernelbench_test ($SECONDS s)"
