#!/usr/bin/env bash
# Fetches the KernelBench problems (a shallow git clone) for scripts/run_kernelbench.sh.
set -euo pipefail

prog=get_kernelbench.sh
repo_url=${KERNELBENCH_URL:-https://github.com/ScalingIntelligence/KernelBench}

usage() {
  cat <<EOF
Usage: scripts/$prog [--ref REF] [DIR]

Clones KernelBench ($repo_url) into DIR (default: ./KernelBench), shallowly, so that
  scripts/run_kernelbench.sh --level 1 --kernelbench DIR
finds its problems in DIR/KernelBench/level1/*.py. Needs git and a network connection.

  DIR        where to clone (must not exist, or be an earlier clone: then it is left as it is)
  --ref REF  a branch or tag to clone instead of the default branch
  -h, --help this help
  \$KERNELBENCH_URL  clone from this URL instead (a mirror)

Exit status: 0 when DIR holds the problems, 1 when the clone failed, 2 for bad usage.
EOF
}

usage_error() {
  printf '%s: error: %s\nRun scripts/%s --help for the options.\n' "$prog" "$1" "$prog" >&2
  exit 2
}

dir="" ref=""
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --ref)
      (($# >= 2)) || usage_error "--ref needs a value"
      ref=$2
      shift 2
      ;;
    --ref=*) ref=${1#*=}; shift ;;
    -*) usage_error "unknown option '$1'" ;;
    *)
      [[ -z $dir ]] || usage_error "one DIR only (got '$dir' and '$1')"
      dir=$1
      shift
      ;;
  esac
done
dir=${dir:-KernelBench}

if [[ -d $dir/KernelBench/level1 ]]; then
  echo "$prog: $dir already holds KernelBench; nothing to do (git -C $dir pull to update it)" >&2
  exit 0
fi
if [[ -e $dir ]] && [[ ! -d $dir || -n $(ls -A -- "$dir") ]]; then
  usage_error "$dir exists and is not a KernelBench clone; give another DIR"
fi
command -v git >/dev/null || { echo "$prog: error: git is not installed" >&2; exit 1; }

args=(clone --depth 1)
[[ -z $ref ]] || args+=(--branch "$ref")
if ! git "${args[@]}" -- "$repo_url" "$dir"; then
  echo "$prog: error: cloning $repo_url failed (no network? see git's message above)" >&2
  exit 1
fi
if [[ ! -d $dir/KernelBench/level1 ]]; then
  echo "$prog: error: $dir/KernelBench/level1 is missing: the repository's layout has changed" >&2
  exit 1
fi
echo "$prog: KernelBench is in $dir; run: scripts/run_kernelbench.sh --level 1 --kernelbench $dir" >&2
