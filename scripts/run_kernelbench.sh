#!/usr/bin/env bash
# Runs `mblast optimize` over the problems of one KernelBench level: one process per GPU at a time,
# one shared knowledge base, resumable. `--help` explains.
set -euo pipefail

prog=run_kernelbench.sh
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  cat <<EOF
Usage: scripts/$prog --level N --kernelbench DIR [options] [-- MBLAST_OPTIMIZE_FLAGS...]

Runs \`mblast optimize\` on each selected problem of KernelBench level N, all runs learning into
one knowledge base (KB), and collects one JSON line per finished problem.

Required:
  --level N            KernelBench level (1, 2, 3, ...)
  --kernelbench DIR    a KernelBench checkout (problems in DIR/KernelBench/levelN/*.py, see
                       scripts/get_kernelbench.sh) or a folder holding levelN/ directly.
                       Problems are the files named <number>_<name>.py.

Options:
  --problems SPEC      which problems, by the number that starts their file name:
                       "1-10,15,19" or "all" (default). A single number that names no file is
                       an error; a range takes the files it covers.
  --gpus LIST          GPUs to use, e.g. 0,1,2,3 (indices or UUIDs): one mblast process per GPU at
                       a time, each with CUDA_VISIBLE_DEVICES set to its GPU, each GPU taking the
                       next problem when its run ends. Without --gpus: one problem at a time and
                       CUDA_VISIBLE_DEVICES is left as it is.
  --out DIR            batch directory (default: ./kernelbench-levelN)
  --kb PATH            knowledge base shared by all runs (default: OUT/kb.sqlite, or
                       OUT/kb-shard-I.sqlite with --shard; SQLite in WAL mode takes the
                       concurrent writers of one host)
  --mblast PATH        mblast binary (default: \$MBLAST, else build/mblast of this checkout,
                       else mblast on PATH)
  --shard I/N          run only shard I (0 <= I < N) of the selected problems, split round-robin;
                       the shard writes its own KB, results and record (kb-shard-I.sqlite,
                       results-shard-I.jsonl, batch-shard-I.json). Used by scripts/slurm/.
  --list               print the selected problems (one file a line) and exit
  -h, --help           this help
  Everything after -- goes to each \`mblast optimize\`, e.g. -- --iterations 5 --llm openai:gpt-4o
  (not --out, --resume, --kb or --json: this script sets them).

What it writes in OUT:
  batch.json           level, KernelBench folder, problems (all those asked for so far), GPUs,
                       flags, started_at, mblast version
  runs/<stem>/         one mblast run directory per problem (run.json once it has ended)
  logs/<stem>.log      the output of each run (appended to when a run is resumed)
  results.jsonl        one line per ended run: its run.json plus "problem" (the file's stem),
                       "problem_file" and "level"; never two lines for one problem
  kb.sqlite            the knowledge base (unless --kb)

Resuming: run the same command again. A problem whose run dir holds run.json is skipped (unless
the run was interrupted: then it is continued); one whose run dir exists without run.json (the
batch was killed) is continued with \`mblast optimize --resume\`, without repeating evaluations.
Delete OUT/runs/<stem> to redo a problem. Ctrl-C or SIGTERM stops every run after its current
step; run the command again to continue. Only one batch runs in an OUT (or shard) at a time.

Progress goes to stderr, one line per problem started and ended.
Exit status: 0 when every selected problem has a run that ended; 1 when some failed (the batch
goes on; see its log); 2 for bad usage or input; 130/143 when stopped by SIGINT/SIGTERM.
EOF
}

die() { # die STATUS MESSAGE...
  local status=$1
  shift
  printf '%s: error: %s\n' "$prog" "$*" >&2
  exit "$status"
}
usage_error() {
  printf '%s: error: %s\n' "$prog" "$*" >&2
  printf 'Run scripts/%s --help for the options.\n' "$prog" >&2
  exit 2
}
note() { printf '%s\n' "$*" >&2; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# JSON work (the run records, results.jsonl, batch.json) in Python's standard library.
read -r -d '' PY_HELPER <<'PY' || true
import json, os, sys

def load_lines(path):
    """results.jsonl as a list of (problem, object, raw line); unparsable lines are kept as is."""
    rows = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                    rows.append((obj.get("problem") if isinstance(obj, dict) else None, obj, raw))
                except ValueError:
                    rows.append((None, None, raw))
    return rows

def rewrite(path, rows):
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as f:
        for _, _, raw in rows:
            f.write(raw if raw.endswith("\n") else raw + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)

def line(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"

def read_run(path):
    with open(path, encoding="utf-8") as f:
        run = json.load(f)
    if not isinstance(run, dict):
        raise ValueError("not a JSON object")
    return run

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "summary":            # summary RUN_JSON -> "status<TAB>correct<TAB>speedup"
    try:
        run = read_run(args[0])
    except (OSError, ValueError) as e:
        print("cannot read %s: %s" % (args[0], e), file=sys.stderr)
        sys.exit(3)
    s = run.get("best_speedup")
    speed = "%.2fx" % s if isinstance(s, (int, float)) and not isinstance(s, bool) else "-"
    print("%s\t%s\t%s" % (run.get("status", "unknown"), "true" if run.get("correct") is True else "false", speed))
elif cmd == "record":           # record RESULTS RUN_JSON STEM LEVEL: one line per problem
    results, run_json, stem, level = args
    run = read_run(run_json)
    run["problem_file"] = run.get("problem")
    run["problem"] = stem
    run["level"] = int(level)
    rows = load_lines(results)
    same = [r for r in rows if r[0] == stem]
    if len(same) == 1 and same[0][1] == run:
        sys.exit(0)
    if not same:
        with open(results, "a+", encoding="utf-8") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:
                f.seek(f.tell() - 1)
                if f.read(1) != "\n":
                    f.write("\n")
            f.write(line(run))
            f.flush()
            os.fsync(f.fileno())
    else:
        out, done = [], False
        for r in rows:
            if r[0] == stem:
                if not done:
                    out.append((stem, run, line(run)))
                    done = True
            else:
                out.append(r)
        rewrite(results, out)
elif cmd == "forget":           # forget RESULTS STEM: drop the problem's line (its run restarts)
    results, stem = args
    rows = load_lines(results)
    if any(r[0] == stem for r in rows):
        rewrite(results, [r for r in rows if r[0] != stem])
elif cmd == "level":            # level BATCH_JSON -> the recorded level, or nothing
    try:
        with open(args[0], encoding="utf-8") as f:
            print(json.load(f).get("level", ""))
    except (OSError, ValueError, AttributeError):
        pass
elif cmd == "batch":            # batch FILE FIELDS_JSON PROBLEMS(newline-separated) -- FLAGS...
    path, fields, problems = args[0], json.loads(args[1]), [p for p in args[2].split("\n") if p]
    flags = args[4:]
    old = {}
    try:
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = {}
    record = dict(fields)
    # Every problem this OUT has been asked to run, in the order of their numbers.
    def number(stem):
        head = stem.split("_", 1)[0]
        return (int(head) if head.isdigit() else 1 << 30, stem)
    record["problems"] = sorted(set(old.get("problems") or []) | set(problems), key=number)
    record["flags"] = flags
    record["started_at"] = old.get("started_at") or fields["now"]
    resumed = list(old.get("resumed_at") or [])
    if old:
        resumed.append(fields["now"])
    record["resumed_at"] = resumed
    del record["now"]
    if old.get("flags") not in (None, flags):
        print("run_kernelbench.sh: note: the mblast flags differ from the recorded ones %s; "
              "runs already started keep their own options" % json.dumps(old.get("flags")),
              file=sys.stderr)
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
else:
    sys.exit("unknown helper command " + cmd)
PY
py() { python3 -c "$PY_HELPER" "$@"; }

# ---------------------------------------------------------------------------------------------
# Arguments
level="" kernelbench="" spec="all" gpus_arg="" out="" kb="" mblast="${MBLAST:-}" shard="" list=0
extra=()
need_value() { # need_value OPTION ARGC
  if (($2 < 2)); then usage_error "$1 needs a value"; fi
}
while (($#)); do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --list) list=1; shift ;;
    --) shift; extra=("$@"); break ;;
    --level=* | --kernelbench=* | --problems=* | --gpus=* | --out=* | --kb=* | --mblast=* | --shard=*)
      opt=${1%%=*} value=${1#*=}
      shift
      set -- "$opt" "$value" "$@"
      continue
      ;;
    --level) need_value "$1" $#; level=$2; shift 2 ;;
    --kernelbench) need_value "$1" $#; kernelbench=$2; shift 2 ;;
    --problems) need_value "$1" $#; spec=$2; shift 2 ;;
    --gpus) need_value "$1" $#; gpus_arg=$2; shift 2 ;;
    --out) need_value "$1" $#; out=$2; shift 2 ;;
    --kb) need_value "$1" $#; kb=$2; shift 2 ;;
    --mblast) need_value "$1" $#; mblast=$2; shift 2 ;;
    --shard) need_value "$1" $#; shard=$2; shift 2 ;;
    *) usage_error "unknown argument '$1' (mblast optimize flags go after --)" ;;
  esac
done

[[ -n $level ]] || usage_error "--level N is required"
[[ -n $kernelbench ]] || usage_error "--kernelbench DIR is required"
if [[ ! $level =~ ^[0-9]+$ ]] || ((10#$level == 0)); then
  usage_error "--level must be a positive number, not '$level'"
fi
level=$((10#$level))
for flag in "${extra[@]+"${extra[@]}"}"; do
  case "$flag" in
    --out | --out=* | --resume | --resume=* | --kb | --kb=* | --json)
      usage_error "do not pass $flag to mblast: this script sets it (use the script's --out/--kb)" ;;
  esac
done

shard_index="" shard_count=""
if [[ -n $shard ]]; then
  [[ $shard =~ ^([0-9]+)/([0-9]+)$ ]] || usage_error "--shard must be I/N, e.g. 0/4, not '$shard'"
  shard_index=$((10#${BASH_REMATCH[1]})) shard_count=$((10#${BASH_REMATCH[2]}))
  ((shard_count > 0 && shard_index < shard_count)) ||
    usage_error "--shard $shard: I must be in 0..N-1"
fi

gpus=()
if [[ -n $gpus_arg ]]; then
  IFS=, read -r -a gpus <<<"$gpus_arg"
  declare -A seen_gpu=()
  for g in "${gpus[@]}"; do
    [[ $g =~ ^[A-Za-z0-9:_.-]+$ ]] || usage_error "--gpus '$gpus_arg': '$g' is not a GPU index or UUID"
    [[ -z ${seen_gpu[$g]:-} ]] || usage_error "--gpus '$gpus_arg' names GPU $g twice"
    seen_gpu[$g]=1
  done
  ((${#gpus[@]})) || usage_error "--gpus needs at least one GPU"
fi

# The problems of the level.
[[ -d $kernelbench ]] || usage_error "--kernelbench $kernelbench: no such directory"
kernelbench=$(cd "$kernelbench" && pwd)
if [[ -d $kernelbench/KernelBench/level$level ]]; then
  level_dir=$kernelbench/KernelBench/level$level
elif [[ -d $kernelbench/level$level ]]; then
  level_dir=$kernelbench/level$level
else
  usage_error "no level$level in $kernelbench (looked for KernelBench/level$level and level$level)"
fi

all_numbers=() all_files=()
while IFS=$'\t' read -r number file; do
  all_numbers+=("$number")
  all_files+=("$file")
done < <(
  for f in "$level_dir"/*.py; do
    name=${f##*/}
    if [[ -f $f && $name =~ ^([0-9]+)_[^[:space:]]*\.py$ ]]; then
      printf '%d\t%s\n' "$((10#${BASH_REMATCH[1]}))" "$f"
    fi
  done | sort -t$'\t' -k1,1n -k2,2
)
((${#all_files[@]})) || usage_error "$level_dir holds no problem files (<number>_<name>.py)"

selected=()
if [[ $spec == all ]]; then
  selected=("${all_files[@]}")
else
  ranges=()
  IFS=, read -r -a items <<<"$spec"
  ((${#items[@]})) || usage_error "--problems is empty"
  for item in "${items[@]}"; do
    if [[ $item =~ ^([0-9]+)$ ]]; then
      n=$((10#$item))
      found=0
      for number in "${all_numbers[@]}"; do ((number == n)) && found=1 && break; done
      ((found)) || usage_error "--problems $spec: level $level has no problem $n (it has ${all_numbers[0]}..${all_numbers[-1]})"
      ranges+=("$n $n")
    elif [[ $item =~ ^([0-9]+)-([0-9]+)$ ]]; then
      lo=$((10#${BASH_REMATCH[1]})) hi=$((10#${BASH_REMATCH[2]}))
      ((lo <= hi)) || usage_error "--problems $spec: range '$item' runs backwards"
      ranges+=("$lo $hi")
    else
      usage_error "--problems '$spec': '$item' is not a number or a range like 1-10 (or use all)"
    fi
  done
  for i in "${!all_files[@]}"; do
    for r in "${ranges[@]}"; do
      read -r lo hi <<<"$r"
      if ((all_numbers[i] >= lo && all_numbers[i] <= hi)); then
        selected+=("${all_files[i]}")
        break
      fi
    done
  done
  ((${#selected[@]})) || usage_error "--problems $spec selects no problem of level $level"
fi

if [[ -n $shard ]]; then
  mine=()
  for i in "${!selected[@]}"; do
    ((i % shard_count == shard_index)) && mine+=("${selected[i]}")
  done
  selected=("${mine[@]+"${mine[@]}"}")
fi

if ((list)); then
  if ((${#selected[@]})); then printf '%s\n' "${selected[@]}"; fi
  exit 0
fi

stems=()
declare -A seen_stem=()
for f in "${selected[@]+"${selected[@]}"}"; do
  stem=${f##*/}
  stem=${stem%.py}
  [[ -z ${seen_stem[$stem]:-} ]] || die 2 "two problems named $stem"
  seen_stem[$stem]=1
  stems+=("$stem")
done

# mblast and python3.
if [[ -z $mblast ]]; then
  if [[ -x $script_dir/../build/mblast ]]; then
    mblast=$script_dir/../build/mblast
  else
    mblast=mblast
  fi
fi
if [[ $mblast != */* ]]; then
  resolved=$(command -v -- "$mblast" || true)
  [[ -n $resolved ]] || usage_error "mblast not found on PATH (build it, or pass --mblast PATH)"
  mblast=$resolved
fi
[[ -x $mblast && -f $mblast ]] || usage_error "--mblast $mblast is not an executable file"
mblast="$(cd "$(dirname "$mblast")" && pwd)/$(basename "$mblast")"
mblast_version=$("$mblast" --version 2>&1) || die 2 "$mblast --version failed: $mblast_version"
command -v python3 >/dev/null || die 2 "python3 is needed (for the JSON records)"

# The batch directory.
[[ -n $out ]] || out=kernelbench-level$level
mkdir -p -- "$out/runs" "$out/logs" || die 2 "cannot create $out"
out=$(cd "$out" && pwd)
if [[ -n $shard ]]; then
  suffix=-shard-$shard_index
else
  suffix=""
fi
[[ -n $kb ]] || kb=$out/kb$suffix.sqlite
kb_dir=$(dirname -- "$kb")
[[ -d $kb_dir ]] || die 2 "--kb $kb: no such directory $kb_dir"
kb="$(cd "$kb_dir" && pwd)/$(basename -- "$kb")"
results=$out/results$suffix.jsonl
record=$out/batch$suffix.json

# One batch per OUT (or shard) at a time; the runs inherit the lock, so runs left over from a
# killed batch keep a new one from starting beside them.
if command -v flock >/dev/null; then
  exec {lock_fd}>"$out/.lock$suffix"
  flock -n "$lock_fd" || die 2 "another batch is running in $out${shard:+ (shard $shard)}"
fi

for f in "$record" "$out/batch.json"; do
  recorded=$(py level "$f")
  if [[ -n $recorded && $recorded != "$level" ]]; then
    die 2 "$out holds a batch of level $recorded ($f); use another --out for level $level"
  fi
done

if [[ -n $shard ]]; then
  shard_json="{\"index\": $shard_index, \"count\": $shard_count}"
else
  shard_json=null
fi
gpus_json=null
if ((${#gpus[@]})); then
  gpus_json="[$(printf '"%s",' "${gpus[@]}")"
  gpus_json="${gpus_json%,}]"
fi
fields=$(
  python3 -c 'import json, sys; a = sys.argv
print(json.dumps({"level": int(a[1]), "kernelbench": a[2], "level_dir": a[3], "gpus": json.loads(a[4]),
  "shard": json.loads(a[5]), "kb": a[6], "mblast": a[7], "mblast_version": a[8], "now": a[9]}))' \
    "$level" "$kernelbench" "$level_dir" "$gpus_json" "$shard_json" "$kb" "$mblast" \
    "$mblast_version" "$(now)"
)
stem_lines=""
if ((${#stems[@]})); then stem_lines=$(printf '%s\n' "${stems[@]}"); fi
py batch "$record" "$fields" "$stem_lines" -- "${extra[@]+"${extra[@]}"}"
[[ -e $results ]] || : >"$results"

total=${#stems[@]}
if ((${#gpus[@]})); then
  slots_text="GPUs ${gpus[*]}, one run per GPU"
else
  slots_text="one run at a time"
fi
note "$prog: level $level, $total problem(s)${shard:+ in shard $shard}, $slots_text; out $out, kb $kb"

# ---------------------------------------------------------------------------------------------
# The queue: each slot (one per GPU, or a single one) takes the next problem when it is free.
nslots=${#gpus[@]}
((nslots)) || nslots=1
slot_pid=() slot_task=()
n_done=0 n_skipped=0 n_failed=0 n_interrupted=0 n_correct=0
failed=()
stopping=0 stop_status=0

where() { # where TASK SLOT: "[k/n] stem on GPU g"
  local text="[$(($1 + 1))/$total] ${stems[$1]}"
  if ((${#gpus[@]})); then text+=" on GPU ${gpus[$2]}"; fi
  printf '%s' "$text"
}

log_tail() { # the last non-empty line of a log, for the failure message
  local last
  last=$(grep -v -e '^[[:space:]]*$' -e '^=== ' "$1" 2>/dev/null | tail -n 1 || true)
  printf '%s' "${last:0:200}"
}

# record_result TASK SLOT: the run's line in the results file (counted as failed when it cannot).
record_result() {
  local stem=${stems[$1]}
  if py record "$results" "$out/runs/$stem/run.json" "$stem" "$level"; then return 0; fi
  note "$(where "$1" "$2"): failed: cannot record its run.json in $results"
  n_failed=$((n_failed + 1))
  failed+=("$stem")
  return 1
}

# start_task TASK SLOT: 0 when the problem was launched, 1 when it was skipped or failed.
start_task() {
  local t=$1 s=$2 stem=${stems[$1]} problem=${selected[$1]}
  local run_dir=$out/runs/$stem log=$out/logs/$stem.log summary status correct speed mode
  local -a cmd
  if [[ -f $run_dir/run.json ]]; then
    if ! summary=$(py summary "$run_dir/run.json"); then
      note "$(where "$t" "$s"): failed: $run_dir/run.json is unreadable; delete $run_dir to redo it"
      n_failed=$((n_failed + 1))
      failed+=("$stem")
      return 1
    fi
    IFS=$'\t' read -r status correct speed <<<"$summary"
    if [[ $status != interrupted ]]; then
      if ! record_result "$t" "$s"; then return 1; fi
      n_done=$((n_done + 1)) n_skipped=$((n_skipped + 1))
      if [[ $correct == true ]]; then
        n_correct=$((n_correct + 1))
      else
        speed="no correct candidate"
      fi
      note "$(where "$t" "$s"): skipped, already ended ($status, $speed)"
      return 1
    fi
  fi
  if ! py forget "$results" "$stem"; then
    note "$(where "$t" "$s"): failed: cannot update $results"
    n_failed=$((n_failed + 1))
    failed+=("$stem")
    return 1
  fi
  if [[ -f $run_dir/config.json ]]; then
    mode=resuming
    cmd=("$mblast" --kb "$kb" optimize --resume "$run_dir" --json "${extra[@]+"${extra[@]}"}")
  else
    mode=starting
    cmd=("$mblast" --kb "$kb" optimize "$problem" --out "$run_dir" --json "${extra[@]+"${extra[@]}"}")
  fi
  if ((${#gpus[@]})); then cmd=(env "CUDA_VISIBLE_DEVICES=${gpus[$s]}" "${cmd[@]}"); fi
  printf '=== %s %s: %s\n' "$(now)" "$mode" "${cmd[*]}" >>"$log"
  "${cmd[@]}" >>"$log" 2>&1 </dev/null &
  slot_pid[s]=$!
  slot_task[s]=$t
  if ((stopping)); then kill -TERM "${slot_pid[s]}" 2>/dev/null || true; fi
  note "$(where "$t" "$s"): $mode"
  return 0
}

end_task() { # end_task SLOT EXIT_STATUS
  local s=$1 rc=$2 t=${slot_task[$1]}
  local stem=${stems[$t]} run_dir=$out/runs/${stems[$t]} summary status correct speed
  local log=$out/logs/$stem.log
  unset 'slot_pid[s]' 'slot_task[s]'
  printf '=== %s exit status %s\n' "$(now)" "$rc" >>"$log"
  if [[ -f $run_dir/run.json ]] && summary=$(py summary "$run_dir/run.json"); then
    IFS=$'\t' read -r status correct speed <<<"$summary"
    if [[ $status == interrupted ]]; then
      note "$(where "$t" "$s"): interrupted; run this again to continue it"
      n_interrupted=$((n_interrupted + 1))
      return
    fi
    if ! record_result "$t" "$s"; then return; fi
    if ((rc == 0)); then
      n_done=$((n_done + 1))
      if [[ $correct == true ]]; then
        n_correct=$((n_correct + 1))
        note "$(where "$t" "$s"): done, $speed"
      else
        note "$(where "$t" "$s"): done, no correct candidate"
      fi
      return
    fi
    note "$(where "$t" "$s"): failed (exit $rc, status $status); see $log"
  elif ((stopping)); then
    note "$(where "$t" "$s"): stopped (exit $rc); run this again to continue it"
    n_interrupted=$((n_interrupted + 1))
    return
  else
    note "$(where "$t" "$s"): failed (exit $rc): $(log_tail "$log"); see $log"
  fi
  n_failed=$((n_failed + 1))
  failed+=("$stem")
}

# shellcheck disable=SC2317 # called by the traps below
on_signal() { # on_signal NAME STATUS: stop taking problems, let each run end after its step
  local pid
  if ((stopping)); then
    # A second signal: stop the runs at once (mblast ends on a second SIGINT).
    for pid in "${slot_pid[@]+"${slot_pid[@]}"}"; do kill -INT "$pid" 2>/dev/null || true; done
    return
  fi
  stopping=1 stop_status=$2
  note "$prog: $1: stopping after the current step of each run (again to stop at once)"
  for pid in "${slot_pid[@]+"${slot_pid[@]}"}"; do kill -TERM "$pid" 2>/dev/null || true; done
}
trap 'on_signal SIGINT 130' INT
trap 'on_signal SIGTERM 143' TERM

next=0
while :; do
  busy=0
  for s in "${!slot_pid[@]}"; do
    if kill -0 "${slot_pid[s]}" 2>/dev/null; then
      busy=$((busy + 1))
    else
      rc=0
      wait "${slot_pid[s]}" || rc=$?
      end_task "$s" "$rc"
    fi
  done
  if ((!stopping)); then
    for ((s = 0; s < nslots; s++)); do
      [[ -z ${slot_pid[s]:-} ]] || continue
      while ((next < total && !stopping)); do
        t=$next
        next=$((next + 1))
        if start_task "$t" "$s"; then
          busy=$((busy + 1))
          break
        fi
      done
    done
  fi
  if ((busy == 0)) && { ((stopping)) || ((next >= total)); }; then break; fi
  sleep 0.5 || true # Ctrl-C reaches sleep too
done

not_run=$((total - next))
summary="$prog: level $level: $total problem(s): $n_done ended ($n_skipped skipped as already ended, $n_correct correct), $n_failed failed"
((n_interrupted == 0)) || summary+=", $n_interrupted interrupted"
((not_run == 0)) || summary+=", $not_run not started"
note "$summary; results in $results"
((n_failed == 0)) || note "$prog: failed: ${failed[*]} (logs in $out/logs)"
if ((stopping)); then exit "$stop_status"; fi
if ((n_failed || n_interrupted)); then exit 1; fi
exit 0
