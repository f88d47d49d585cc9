#!/usr/bin/env bash
# Does a knowledge base filled by earlier tasks make later tasks cheaper? `--help` explains.
set -euo pipefail

prog=benchmarks/transfer.sh
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
Usage: $prog [options] [-- MBLAST_OPTIMIZE_FLAGS...]

The transfer benchmark of the knowledge base (KB), with the built-in techniques only (no LLM):

  1. train: \`mblast optimize\` on every "train" problem of the split, all into one KB
     (OUT/train/kb.sqlite);
  2. test: every "test" problem twice with the same seed and budget: warm, from a copy of the
     trained KB (or of --prior-kb), and cold, from an empty KB; each run has its own copy, so
     the test problems do not learn from each other; the two alternate which runs first, as
     compile caches are shared;
  3. report: \`mblast report OUT/warm --against OUT/cold\`: per level and overall, the
     evaluations until a run first came within 5 % of its own final best, the final best and the
     wall, warm against cold, and the running best per evaluation on both sides.

Options:
  --split FILE        the problems: lines "train PATH" or "test PATH", PATH relative to --root;
                      '#' starts a comment (default: benchmarks/transfer_split.txt)
  --root DIR          where the split's paths are (default: .kb, KernelBench's levels as
                      benchmarks/h200/acceptance.sh prepare lays them out)
  --out DIR           results (default: transfer-results); run again to continue: ended runs
                      are kept, a training run stopped before it ended is resumed, a test run
                      started again from its starting KB
  --mblast PATH       mblast binary (default: \$MBLAST, else build/mblast)
  --prior-kb FILE     warm runs start from this KB instead of training here (e.g. a KB filled
                      on other hardware: its statistics enter the selector discounted, see
                      --other-hardware-weight of \`mblast optimize\`); the train phase is skipped
  --phase PHASE       all (default), train, test or report
  -h, --help          this help
  Everything after -- goes to each \`mblast optimize\`, in place of the default of the same
  option: ${default_flags[*]}
  (not --out or --kb: this script sets them).

What it writes in OUT:
  train/kb.sqlite, train/runs/NAME/     the training runs and their KB
  warm/runs/NAME/, warm/kbs/NAME.sqlite the warm test runs and the KB each started from
  cold/runs/NAME/, cold/kbs/NAME.sqlite the cold test runs and their KBs
  settings.txt                          the split, flags and mblast version of the benchmark
  report.md, report.json, report.html   the comparison

Exit status: 0 when every phase asked for ended (a problem that failed counts in the report as
not correct), 2 for bad usage or input, 143 when stopped by SIGTERM or Ctrl-C (the run in flight
stops after its current step; run the command again to continue).
EOF
}

default_flags=(--llm none --iterations 1 --steps 8 --max-evaluations 6 --seed 1)
split=$root_dir/benchmarks/transfer_split.txt
problem_root=.kb
out=transfer-results
mblast=${MBLAST:-$root_dir/build/mblast}
prior_kb=""
phase=all
extra=()

die() {
  printf '%s: error: %s\n' "$prog" "$1" >&2
  [[ -n ${2:-} ]] && printf 'fix: %s\n' "$2" >&2
  exit 2
}
note() { printf '%s\n' "$*" >&2; }

while (($#)); do
  case $1 in
    --split) split=${2:?}; shift 2 ;;
    --root) problem_root=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --mblast) mblast=${2:?}; shift 2 ;;
    --prior-kb) prior_kb=${2:?}; shift 2 ;;
    --phase) phase=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown option $1" "run $prog --help for the options" ;;
  esac
done

case $phase in all | train | test | report) ;; *) die "--phase $phase is not all, train, test or report" "give one of those" ;; esac
[[ -f $split ]] || die "no split file $split" "give --split FILE with lines \"train PATH\" and \"test PATH\""
[[ -x $mblast ]] || die "no mblast binary at $mblast" "build it (scripts/setup.sh) or give --mblast PATH"
[[ -z $prior_kb || -f $prior_kb ]] || die "no KB file $prior_kb" "give --prior-kb an existing KB file (mblast kb stats --kb FILE shows one)"
for flag in "${extra[@]}"; do
  case $flag in --out | --out=* | --kb | --kb=* | --resume | --resume=*)
    die "$flag is set by this script" "leave it out; give --out to this script instead" ;;
  esac
done

# The split: "SET PATH" per line.
train=()
test=()
while read -r set path rest; do
  [[ -z ${set:-} || ${set:0:1} == "#" ]] && continue
  [[ -z ${rest:-} && -n ${path:-} ]] || die "$split: '$set $path $rest' is not \"train PATH\" or \"test PATH\"" "fix that line"
  [[ -f $problem_root/$path ]] || die "$split: no problem $problem_root/$path" "give --root the folder the split's paths are relative to"
  case $set in
    train) train+=("$path") ;;
    test) test+=("$path") ;;
    *) die "$split: set '$set' is not train or test" "fix that line" ;;
  esac
done <"$split"
((${#test[@]})) || die "$split has no test problem" "add lines \"test PATH\""
for t in "${test[@]}"; do
  for r in "${train[@]}"; do
    [[ $t != "$r" ]] || die "$split: $t is in both sets" "the sets must be disjoint"
  done
done

# The defaults the extra flags do not set.
flags=()
for ((i = 0; i < ${#default_flags[@]}; i += 2)); do
  given=""
  for flag in "${extra[@]}"; do
    [[ $flag == "${default_flags[i]}" || $flag == "${default_flags[i]}="* ]] && given=1
  done
  [[ -n $given ]] || flags+=("${default_flags[i]}" "${default_flags[i + 1]}")
done
flags+=("${extra[@]}")

mkdir -p "$out"
{
  echo "split: $split (${#train[@]} train, ${#test[@]} test)"
  echo "root: $problem_root"
  echo "optimize flags: ${flags[*]}"
  echo "prior KB: ${prior_kb:-none (trained here)}"
  echo "mblast: $("$mblast" --version 2>&1 | head -1)"
  echo "written: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$out/settings.txt"

run_name() { # level1/19_ReLU.py -> level1-19_ReLU
  local name=${1%.py}
  echo "${name//\//-}"
}

# A copy of a SQLite KB that holds every committed row, WAL included.
copy_kb() {
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
source, target = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
source.backup(target)
target.close()
source.close()
PY
}

# SIGTERM or Ctrl-C (a device call's timeout) stops the run in flight after its current step, as
# mblast optimize does on that signal; it is started again by the next call.
child=""
stop() {
  if [[ -n $child ]]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  note "stopped; run the same command again to continue"
  exit 143
}
trap stop TERM INT

# Whether the run in DIR ended (run.json, and not stopped by a signal).
ended() {
  [[ -f $1/run.json ]] && ! grep -q '"status": *"interrupted"' "$1/run.json"
}

# optimize PATH RUN_DIR KB [resume]: one run, skipped when it has ended before. A run stopped
# before it ended is resumed with `resume` (a training run: its attempts are in the KB already),
# else started again.
optimize() {
  local problem=$1 dir=$2 kb=$3 resume=${4:-}
  local label=${dir#"$out"/}
  label=${label/\/runs\//: }
  if ended "$dir"; then
    note "  $label: ended before, kept"
    return 0
  fi
  local command=("$mblast" --kb "$kb" optimize "$problem_root/$problem" --out "$dir" "${flags[@]}")
  if [[ -d $dir && -n $resume ]]; then
    note "  $label: stopped before, resumed"
    command=("$mblast" --kb "$kb" optimize --resume "$dir")
  elif [[ -d $dir ]]; then
    note "  $label: stopped before, started again"
    rm -rf "$dir"
  fi
  mkdir -p "$(dirname "$dir")"
  local start=$SECONDS status=0
  "${command[@]}" >>"$dir.log" 2>&1 &
  child=$!
  wait "$child" || status=$?
  child=""
  note "  $label: exit $status, $((SECONDS - start)) s$(
    [[ -f $dir/run.json ]] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(", best %.3gx in %d evaluations" % (r["best_speedup"], r["evaluations"]))' "$dir/run.json" 2>/dev/null
  )"
}

if [[ $phase == all || $phase == train ]] && [[ -z $prior_kb ]]; then
  note "train: ${#train[@]} problems into $out/train/kb.sqlite"
  for p in "${train[@]}"; do
    optimize "$p" "$out/train/runs/$(run_name "$p")" "$out/train/kb.sqlite" resume
  done
fi

if [[ $phase == all || $phase == test ]]; then
  source_kb=${prior_kb:-$out/train/kb.sqlite}
  [[ -f $source_kb ]] || die "no trained KB at $source_kb" "run --phase train first (its logs are $out/train/runs/*.log), or give --prior-kb FILE"
  mkdir -p "$out/warm/kbs" "$out/cold/kbs"
  note "test: ${#test[@]} problems, warm (from $source_kb) and cold (empty KB)"
  # Compile caches (Inductor's, mblast's build cache) are shared, so the second run of a problem may
  # build faster: the order alternates, warm first on every other problem.
  order=0
  for p in "${test[@]}"; do
    name=$(run_name "$p")
    sides="warm cold"
    ((order++ % 2)) && sides="cold warm"
    for side in $sides; do
      kb=$out/$side/kbs/$name.sqlite
      if ! ended "$out/$side/runs/$name"; then
        rm -f "$kb" "$kb-wal" "$kb-shm"
        [[ $side == warm ]] && copy_kb "$source_kb" "$kb"
      fi
      optimize "$p" "$out/$side/runs/$name" "$kb"
    done
  done
fi

if [[ -d $out/warm/runs && -d $out/cold/runs ]]; then
  "$mblast" report "$out/warm" --against "$out/cold" --html "$out/report.html" >"$out/report.md"
  "$mblast" report "$out/warm" --against "$out/cold" --json >"$out/report.json"
  awk '/^## Against/ {shown = 1; print; next} shown && /^## / {exit} shown' "$out/report.md"
fi
