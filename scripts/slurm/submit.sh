#!/usr/bin/env bash
# Submits a KernelBench batch to Slurm: a job array of shards and a merge job that runs after it.
# `--help` explains.
set -euo pipefail

prog=submit.sh
slurm_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scripts_dir="$(dirname "$slurm_dir")"

usage() {
  cat <<EOF
Usage: scripts/slurm/$prog --level N --kernelbench DIR [options] [-- MBLAST_OPTIMIZE_FLAGS...]

Submits a KernelBench batch as a Slurm job array of SHARDS tasks (the selected problems split
round-robin; task I writes OUT/kb-shard-I.sqlite and OUT/results-shard-I.jsonl, and its runs to
OUT/runs/, OUT/logs/), and a merge job that starts when the array has ended, however it ended
(--dependency=afterany): it folds the shards into OUT/kb.sqlite, OUT/results.jsonl,
OUT/batch.json and, when mblast has the report command, OUT/report.html.
Prints the job ids on stdout: array_job=ID and merge_job=ID.

OUT, DIR and the mblast binary must be on a file system that the compute nodes share.
Submitting the same command again resumes: ended problems are skipped, interrupted ones continue.

Options:
  --level N              KernelBench level (required)
  --kernelbench DIR      KernelBench checkout or folder with levelN/ (required)
  --problems SPEC        "1-10,15,19" or all (default), as for scripts/run_kernelbench.sh
  --out DIR              batch directory (default: ./kernelbench-levelN)
  --shards N             array tasks (default 4; never more than the problems)
  --gpus-per-shard G     GPUs per array task, --gres=gpu:G (default 1; 0 for CPU-only runs);
                         each GPU of a task runs one problem at a time
  --cpus-per-shard C     CPUs per array task (--cpus-per-task; default: Slurm's)
  --mblast PATH          mblast binary (default: \$MBLAST, else build/mblast of this checkout,
                         else mblast on PATH)
  --sbatch-arg ARG       pass ARG to both sbatch calls (repeatable), e.g. --sbatch-arg=--partition=gpu
                         --sbatch-arg=--time=12:00:00 --sbatch-arg=--account=proj
  --dry-run              print the two sbatch commands instead of running them
  -h, --help             this help
  Everything after -- goes to each mblast optimize, e.g. -- --iterations 5 --llm openai:gpt-4o,
  or -- --device cpu --iterations 1 --steps 1 to try the pipeline without GPUs.

Follow it with squeue -j ARRAY,MERGE; stop it with scancel ARRAY (the merge still runs).
Exit status: 0 submitted; 1 sbatch failed; 2 bad usage.
EOF
}

usage_error() {
  printf '%s: error: %s\nRun scripts/slurm/%s --help for the options.\n' "$prog" "$1" "$prog" >&2
  exit 2
}

level="" kernelbench="" spec="all" out="" shards=4 gpus_per_shard=1 cpus_per_shard=""
mblast=${MBLAST:-} dry_run=0
sbatch_args=() extra=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; extra=("$@"); break ;;
    --*=*)
      opt=${1%%=*} value=${1#*=}
      shift
      set -- "$opt" "$value" "$@"
      ;;
    --level | --kernelbench | --problems | --out | --shards | --gpus-per-shard | --cpus-per-shard | \
      --mblast | --sbatch-arg)
      (($# >= 2)) || usage_error "$1 needs a value"
      case "$1" in
        --level) level=$2 ;;
        --kernelbench) kernelbench=$2 ;;
        --problems) spec=$2 ;;
        --out) out=$2 ;;
        --shards) shards=$2 ;;
        --gpus-per-shard) gpus_per_shard=$2 ;;
        --cpus-per-shard) cpus_per_shard=$2 ;;
        --mblast) mblast=$2 ;;
        --sbatch-arg) sbatch_args+=("$2") ;;
      esac
      shift 2
      ;;
    *) usage_error "unknown argument '$1' (mblast optimize flags go after --)" ;;
  esac
done

[[ -n $level ]] || usage_error "--level N is required"
[[ -n $kernelbench ]] || usage_error "--kernelbench DIR is required"
if [[ ! $shards =~ ^[0-9]+$ ]] || ((10#$shards == 0)); then
  usage_error "--shards must be a positive number"
fi
[[ $gpus_per_shard =~ ^[0-9]+$ ]] || usage_error "--gpus-per-shard must be a number (0 for none)"
if [[ -n $cpus_per_shard ]] && { [[ ! $cpus_per_shard =~ ^[0-9]+$ ]] || ((10#$cpus_per_shard == 0)); }; then
  usage_error "--cpus-per-shard must be a positive number"
fi
shards=$((10#$shards)) gpus_per_shard=$((10#$gpus_per_shard))

# Absolute paths: the jobs run elsewhere, from a copy of the array script.
[[ -d $kernelbench ]] || usage_error "--kernelbench $kernelbench: no such directory"
kernelbench=$(cd "$kernelbench" && pwd)
[[ -n $out ]] || out=kernelbench-level$level
if [[ -z $mblast ]]; then
  if [[ -x $scripts_dir/../build/mblast ]]; then mblast=$scripts_dir/../build/mblast; else mblast=mblast; fi
fi
if [[ $mblast != */* ]]; then
  mblast=$(command -v -- "$mblast") || usage_error "mblast not found on PATH; pass --mblast PATH"
fi
[[ -x $mblast && -f $mblast ]] || usage_error "--mblast $mblast is not an executable file"
mblast="$(cd "$(dirname "$mblast")" && pwd)/$(basename "$mblast")"
[[ $scripts_dir != *,* ]] || usage_error "the checkout's path must not contain a comma (sbatch --export)"

# Check the selection and the flags now, and count the problems, rather than in every task.
batch_args=(--level "$level" --kernelbench "$kernelbench" --problems "$spec" --mblast "$mblast")
listing=$("$scripts_dir/run_kernelbench.sh" "${batch_args[@]}" --list -- "${extra[@]+"${extra[@]}"}") ||
  exit 2
count=$(grep -c . <<<"$listing" || true)
if ((shards > count)); then
  echo "$prog: $count problem(s): $count shard(s) instead of $shards" >&2
  shards=$count
fi

if ((!dry_run)); then
  command -v sbatch >/dev/null || { echo "$prog: error: sbatch not found: run this where Slurm's commands are" >&2; exit 1; }
  mkdir -p -- "$out/logs" || { echo "$prog: error: cannot create $out/logs" >&2; exit 1; }
  out=$(cd "$out" && pwd)
else
  case "$out" in /*) ;; *) out=$PWD/$out ;; esac
fi

array_cmd=(sbatch --parsable --array="0-$((shards - 1))" --job-name="mblast-kb-l$level"
  --output="$out/logs/slurm-array-%A_%a.out" --export="ALL,MBLAST_SCRIPTS=$scripts_dir")
((gpus_per_shard == 0)) || array_cmd+=(--gres="gpu:$gpus_per_shard")
[[ -z $cpus_per_shard ]] || array_cmd+=(--cpus-per-task="$cpus_per_shard")
array_cmd+=("${sbatch_args[@]+"${sbatch_args[@]}"}" "$slurm_dir/kernelbench_array.sbatch"
  "${batch_args[@]}" --out "$out")
((${#extra[@]} == 0)) || array_cmd+=(-- "${extra[@]}")
merge_tail=("${sbatch_args[@]+"${sbatch_args[@]}"}" "$slurm_dir/merge.sbatch" --out "$out"
  --shards "$shards" --mblast "$mblast")
merge_head=(sbatch --parsable --job-name="mblast-kb-l$level-merge"
  --output="$out/logs/slurm-merge-%j.out" --export="ALL,MBLAST_SCRIPTS=$scripts_dir")

if ((dry_run)); then
  printf '%q ' "${array_cmd[@]}"
  printf '\n'
  printf '%q ' "${merge_head[@]}" --dependency=afterany:ARRAY_JOB "${merge_tail[@]}" --array-job ARRAY_JOB
  printf '\n'
  exit 0
fi

array_job=$("${array_cmd[@]}") || { echo "$prog: error: sbatch of the array failed" >&2; exit 1; }
array_job=${array_job%%;*}
merge_job=$("${merge_head[@]}" --dependency="afterany:$array_job" "${merge_tail[@]}" \
  --array-job "$array_job") || {
  echo "$prog: error: the array is job $array_job, but sbatch of the merge job failed; when the" \
    "array has ended, run: bash $slurm_dir/merge.sbatch --out $out --shards $shards --mblast $mblast" >&2
  echo "array_job=$array_job"
  exit 1
}
merge_job=${merge_job%%;*}
echo "array_job=$array_job"
echo "merge_job=$merge_job"
echo "$prog: level $level, $count problem(s) in $shards shard(s); out $out" \
  "(follow: squeue -j $array_job,$merge_job; stop: scancel $array_job)" >&2
