#!/usr/bin/env bash
# Candidate code must see the file system read-only except its own temporary folder: it can
# write neither the knowledge base, nor a run directory, nor any file of the cache (stored
# references, problem facts, builds), nor the user's files, and it cannot read the stored float64
# references. A candidate generated here tries each of those at import and in forward; the test
# fails if any write lands, or if the candidate read a reference (it then answers wrongly).
#
#   tests/isolation/run_isolation.sh [MBLAST [DEVICE]]   # DEVICE: cpu (default, CI) or cuda
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mblast=${1:-${MBLAST_BINARY:-$root/build/mblast}}
device=${2:-cpu}
[[ -x $mblast ]] || { echo "FAIL: no mblast binary at $mblast" >&2; exit 1; }
if [[ ${MBLAST_SANDBOX:-} && ${MBLAST_SANDBOX} != bwrap ]]; then
  echo "FAIL: MBLAST_SANDBOX=$MBLAST_SANDBOX: only bwrap gives a read-only sandbox" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/isolation_test.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

export HOME=$tmp/home XDG_DATA_HOME=$tmp/home/.local/share MBLAST_EVAL_SERVER=0
mkdir -p "$XDG_DATA_HOME/mblast" "$tmp/run" "$tmp/cache"
kb=$XDG_DATA_HOME/mblast/kb.sqlite
"$mblast" kb init --kb "$kb" >/dev/null
echo '{"step": 1}' >"$tmp/run/steps.jsonl"
echo "the user's own file" >"$HOME/notes.txt"
# Small enough that its references are stored on every device (facts.py stores large ones only
# where recomputing them costs more than reading them back).
problem=$root/tests/problems/relu_small.py

# A first judgement fills the cache: facts, references, ceilings.
"$mblast" eval "$problem" --candidate "$problem" --device "$device" --cache-dir "$tmp/cache" \
  --seeds 2 --json >"$tmp/first.json" || fail "the problem did not pass against itself: $(head -c 600 "$tmp/first.json")"
ls "$tmp/cache/reference" | grep -q '^ref-' || fail "the first judgement stored no reference"
mkdir -p "$tmp/cache/cuda" && echo "a build" >"$tmp/cache/cuda/existing.so"

cat >"$tmp/attacker.py" <<PY
import glob, os
import torch

TARGETS = [
    "$kb", "$tmp/run/steps.jsonl", "$tmp/run/forged.json", "$HOME/notes.txt", "$HOME/new.txt",
    "$tmp/cache/cuda/existing.so", "$tmp/cache/cuda/forged.so", "$tmp/cache/reference/forged.pt",
    "$tmp/outside.txt", "/tmp/isolation-forged-$$.txt",
] + glob.glob("$tmp/cache/reference/*") + glob.glob("$tmp/cache/ceilings/*")


def attack():
    for path in TARGETS:
        try:
            with open(path, "a") as fh:
                fh.write("forged")
        except OSError:
            pass
        try:
            os.utime(path, (0, 0))
        except OSError:
            pass
    for path in glob.glob("$tmp/cache/reference/*"):
        try:
            os.unlink(path)
        except OSError:
            pass


def read_reference():
    for path in glob.glob("$tmp/cache/reference/ref-*"):
        try:
            with open(path, "rb") as fh:
                if fh.read(16):
                    return True
        except OSError:
            pass
    return False


attack()
READ = read_reference()


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        attack()
        return torch.zeros_like(x) if READ or read_reference() else torch.relu(x)
PY

snapshot() {
  (cd "$tmp" && find home run cache outside.txt -type f -print0 2>/dev/null | sort -z |
    xargs -0 -r sha256sum; find home run cache -newer "$tmp/attacker.py" -print 2>/dev/null) ||
    true
}
snapshot >"$tmp/before.txt"
status=0
"$mblast" eval "$problem" --candidate "$tmp/attacker.py" --device "$device" --cache-dir "$tmp/cache" \
  --seeds 2 --json >"$tmp/attack.json" || status=$?
snapshot >"$tmp/after.txt"
python3 - "$tmp/attack.json" <<'PY' || fail "the attacker's result: $(head -c 800 "$tmp/attack.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["sandbox"] == "bwrap", f"sandbox {r['sandbox']}: candidate code is not isolated here"
assert r["correct"] is True, f"the candidate read a stored reference, or failed: {r['error']}"
PY
pass "the attacker ran under bwrap and could not read a stored reference (exit $status)"
if ! diff "$tmp/before.txt" "$tmp/after.txt" >"$tmp/diff.txt"; then
  fail "a write landed: $(cat "$tmp/diff.txt")"
fi
[[ ! -e "$tmp/outside.txt" && ! -e /tmp/isolation-forged-$$.txt ]] || fail "a file was created outside the sandbox"
pass "no write landed in the KB, the run directory, the cache, the home folder or /tmp"
# The cache is still trusted and whole: the next judgement reads it.
"$mblast" eval "$problem" --candidate "$problem" --device "$device" --cache-dir "$tmp/cache" \
  --seeds 2 --json >"$tmp/again.json" || fail "the problem no longer passes against itself"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['reference_cache_hits'] == 2, r['reference_cache_hits']" "$tmp/again.json" ||
  fail "the stored references were not reused after the attack"
pass "the cache is intact and reused"
echo "isolation: all checks passed"
