#!/usr/bin/env bash
# Issue 3's benchmarks on the H200: evaluation latency, timing agreement and coverage.
#
#   benchmarks/h200/run_issue3.sh KERNELBENCH_DIR [OUT_DIR] [SECTION...]
#
# SECTION: eval_latency | timing | coverage | all (default) | call1 (= timing eval_latency: the
# bounded section first) | call2 (= coverage). Run from the repository root. Short tables go to stdout (the device tool
# returns only the last 12,000 characters). OUT_DIR (default: $OUT/issue3 when $OUT is set, else
# ./issue3-results) receives at most 7 files, as the device tool brings back: log.txt,
# environment.txt, latency.json, timing.json, spread.json, coverage.json and records.tar.gz (every
# raw record, from WORK_DIR). See benchmarks/h200/README.md.
#
# Environment (defaults in brackets; budgets and limits in seconds):
#   MBLAST [.device/mblast]  PYTHON [python3]  CANDIDATES [benchmarks/cuda_candidates/level1]
#   WORK_DIR [${TMPDIR:-/tmp}/issue3-work]: records and caches (caches are deleted at the end)
#   DEADLINE_S [530]: no evaluation starts that could end later than this after the script began
#   LATENCY_BUDGET_S [300] LATENCY_TIMEOUT_S [120] LATENCY_CANDIDATES [small problems first]
#   LATENCY_REF_CACHE_MAX [250000000]: input elements above which a candidate's evaluation gets
#     no reference-output cache (float64 outputs of 1.6e9 elements take 12.8 GB per seed)
#   TIMING_BUDGET_S [300]  TIMING_TIMEOUT_S [120]  TIMING_PROBLEMS [5 level-1 + 5 level-2]
#   SPREAD_CANDIDATE [88_MinGPTNewGelu]  SPREAD_RUNS [5]
#   COVERAGE_BUDGET_S [520] COVERAGE_TIMEOUT_S [120] COVERAGE_JOBS [4] COVERAGE_BIG_JOBS [2]
#   COVERAGE_LEVELS [level1,level2]
#   EVAL_ARGS []: extra arguments for every `mblast eval` (e.g. "--device cpu" to test the script)
set -euo pipefail

usage() {
  sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
case "$1" in -h|--help) usage ;; esac
KB_DIR=$1
shift
OUT_DIR=""
SECTIONS=()
for arg in "$@"; do
  case "$arg" in
    eval_latency|timing|coverage) SECTIONS+=("$arg") ;;
    all) SECTIONS+=(eval_latency timing coverage) ;;
    call1) SECTIONS+=(timing eval_latency) ;;
    call2) SECTIONS+=(coverage) ;;
    -h|--help) usage ;;
    -*) echo "run_issue3: unknown option $arg" >&2; usage ;;
    *)
      if [[ -z "$OUT_DIR" ]]; then
        OUT_DIR=$arg
      else
        echo "run_issue3: unknown section $arg (eval_latency|timing|coverage|all|call1|call2)" >&2
        exit 2
      fi
      ;;
  esac
done
[[ ${#SECTIONS[@]} -gt 0 ]] || SECTIONS=(eval_latency timing coverage)
if [[ -z "$OUT_DIR" ]]; then
  if [[ -n "${OUT:-}" ]]; then OUT_DIR=$OUT/issue3; else OUT_DIR=issue3-results; fi
fi

HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/issue3_tools.py
KB_TIMING=$HERE/kernelbench_timing.py
PYTHON=${PYTHON:-python3}
MBLAST=${MBLAST:-.device/mblast}
WORK_DIR=${WORK_DIR:-${TMPDIR:-/tmp}/issue3-work}
CANDIDATES=${CANDIDATES:-$HERE/../cuda_candidates/level1}
DEADLINE_S=${DEADLINE_S:-530}
LATENCY_BUDGET_S=${LATENCY_BUDGET_S:-300}
LATENCY_TIMEOUT_S=${LATENCY_TIMEOUT_S:-120}
# The two small problems first (8192 x 8192 and 4096 x 4096 inputs), then the 1.6e9-element ones.
DEFAULT_LATENCY_CANDIDATES="88_MinGPTNewGelu 12_Matmul_with_diagonal_matrices_ 19_ReLU \
47_Sum_reduction_over_a_dimension 21_Sigmoid 26_GELU_ 31_ELU 20_LeakyReLU 22_Tanh 29_Softplus \
30_Softsign 32_HardTanh"
LATENCY_CANDIDATES=${LATENCY_CANDIDATES:-$DEFAULT_LATENCY_CANDIDATES}
LATENCY_REF_CACHE_MAX=${LATENCY_REF_CACHE_MAX:-250000000}
TIMING_BUDGET_S=${TIMING_BUDGET_S:-300}
TIMING_TIMEOUT_S=${TIMING_TIMEOUT_S:-120}
# Small (8192 x 8192), so five runs take little of the budget.
SPREAD_CANDIDATE=${SPREAD_CANDIDATE:-88_MinGPTNewGelu}
SPREAD_RUNS=${SPREAD_RUNS:-5}
COVERAGE_BUDGET_S=${COVERAGE_BUDGET_S:-520}
COVERAGE_TIMEOUT_S=${COVERAGE_TIMEOUT_S:-120}
COVERAGE_JOBS=${COVERAGE_JOBS:-4}
COVERAGE_BIG_JOBS=${COVERAGE_BIG_JOBS:-2}
COVERAGE_LEVELS=${COVERAGE_LEVELS:-level1,level2}
# Five level-1 and five level-2 problems of moderate size (2e6 to 1.4e8 input elements; most of
# level 1 has 1e9 and more, which CPU input generation makes slow): matmuls, layer norm, a
# convolution, an elementwise chain, and level-2 fusions around a GEMM or a convolution.
DEFAULT_TIMING_PROBLEMS="level1/1_Square_matrix_multiplication_ \
level1/8_Matmul_with_irregular_shapes_ level1/40_LayerNorm \
level1/50_conv_standard_2D__square_input__square_kernel level1/88_MinGPTNewGelu \
level2/12_Gemm_Multiply_LeakyReLU level2/40_Matmul_Scaling_ResidualAdd level2/76_Gemm_Add_ReLU \
level2/1_Conv2D_ReLU_BiasAdd level2/57_Conv2d_ReLU_HardSwish"
TIMING_PROBLEMS=${TIMING_PROBLEMS:-$DEFAULT_TIMING_PROBLEMS}
read -r -a EVAL_ARGS <<<"${EVAL_ARGS:-}"

abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
MBLAST=$(abspath "$MBLAST")
KB_DIR=$(abspath "$KB_DIR")
OUT_DIR=$(abspath "$OUT_DIR")
WORK_DIR=$(abspath "$WORK_DIR")
CANDIDATES=$(abspath "$CANDIDATES")

if [[ "${ISSUE3_DRY_RUN:-0}" == 1 ]]; then
  # Argument handling only (used by the tests of this script).
  printf 'kb=%s\nout=%s\nwork=%s\nsections=%s\nmblast=%s\n' "$KB_DIR" "$OUT_DIR" "$WORK_DIR" \
    "${SECTIONS[*]}" "$MBLAST"
  exit 0
fi

fail=0
[[ -d "$KB_DIR/level1" && -d "$KB_DIR/level2" ]] ||
  { echo "run_issue3: $KB_DIR has no level1/ and level2/" >&2; fail=1; }
[[ -x "$MBLAST" ]] ||
  { echo "run_issue3: no mblast at $MBLAST (set MBLAST; see benchmarks/h200/README.md)" >&2; fail=1; }
command -v "$PYTHON" >/dev/null || { echo "run_issue3: no $PYTHON" >&2; fail=1; }
[[ $fail == 0 ]] || exit 2

mkdir -p "$OUT_DIR" "$WORK_DIR"
LOG=$OUT_DIR/log.txt
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

now() { date +%s; }
SCRIPT_START=$(now)

# can_start SECTION_START SECTION_BUDGET TIMEOUT: whether one more evaluation fits both the
# section's budget and the script's deadline.
can_start() {
  local t
  t=$(now)
  ((t - $1 <= $2 && t - SCRIPT_START + $3 <= DEADLINE_S))
}

# A cache folder whose reference/ is a plain file: the worker cannot store float64 reference
# outputs there (it notes the failed write and goes on). Sections that judge each problem once
# gain nothing from that cache, and on level 1 it costs up to 12.8 GB of disk per seed.
no_reference_cache() {
  mkdir -p "$1"
  rm -rf "$1/reference"
  : >"$1/reference"
}

# One judged command, recorded as JSON; never fails the script.
record() {  # RECORD.json TIMEOUT LABEL COMMAND...
  local path=$1 timeout=$2 label=$3
  shift 3
  "$PYTHON" "$TOOLS" run "$path" --timeout "$timeout" --label "$label" -- "$@" ||
    echo "run_issue3: could not record $label" >&2
}

summarise() {  # SUBCOMMAND SUMMARY.json: summarises WORK_DIR's records, copies the summary out
  "$PYTHON" "$TOOLS" "$1" "$WORK_DIR" || echo "run_issue3: summary '$1' failed (records in $WORK_DIR)"
  if [[ -f "$WORK_DIR/$2" ]]; then cp "$WORK_DIR/$2" "$OUT_DIR/$2"; fi
}

environment() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(hostname)"
    echo "mblast: $MBLAST ($("$MBLAST" --version 2>&1 | head -1 || true))"
    echo "python: $("$PYTHON" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1 || true)"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1 || true)"
    echo "nvcc: $( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) 2>/dev/null) $( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | tail -1 || true)"
    echo "disk: $(df -h "$WORK_DIR" 2>/dev/null | tail -1)"
    echo "sections: ${SECTIONS[*]}; deadline ${DEADLINE_S} s"
  } | tee "$OUT_DIR/environment.txt"
}

# ---------------------------------------------------------------------------------------------
section_eval_latency() {
  local dir=$WORK_DIR/eval_latency seed start help multi=false
  echo
  echo "### eval_latency (budget ${LATENCY_BUDGET_S} s)"
  rm -rf "$dir"
  mkdir -p "$dir/cold" "$dir/warm"
  seed=$dir/ceilings-seed
  help=$("$MBLAST" eval --help 2>&1 || true)
  # CLI11 prints "TEXT ..." for an option that may repeat.
  if grep -Eqi -- '--candidate[^,]*(\.\.\.|several|multiple|one or more|repeat)' <<<"$help"; then
    multi=true
  fi
  # Each candidate belongs to a different problem while a multi-candidate call judges candidates of
  # one problem, so every candidate is its own mblast process either way; the result's own
  # eval/build seconds are read when present.
  local name count=0 problems=() big=() elements
  for name in $LATENCY_CANDIDATES; do
    [[ -f "$CANDIDATES/$name.py" ]] && count=$((count + 1))
    [[ -f "$KB_DIR/level1/$name.py" ]] && problems+=("$KB_DIR/level1/$name.py")
  done
  # Problems too large for a reference-output cache on this disk (unknown size counts as large).
  if [[ ${#problems[@]} -gt 0 ]]; then
    while read -r name elements; do
      if ((elements < 0 || elements > LATENCY_REF_CACHE_MAX)); then big+=("$name"); fi
    done < <("$PYTHON" "$TOOLS" sizes "${problems[@]}" || true)
  fi
  local big_json=""
  if [[ ${#big[@]} -gt 0 ]]; then big_json=$(printf '"%s",' "${big[@]}" | sed 's/,$//'); fi
  printf '{"multi_candidate_support": %s, "mode": "one process per candidate; cold then warm, same cache", "candidates": %s, "no_reference_cache": [%s]}\n' \
    "$multi" "$count" "$big_json" >"$dir/meta.json"
  if [[ ${#big[@]} -gt 0 ]]; then echo "no reference-output cache (inputs > $LATENCY_REF_CACHE_MAX elements): ${big[*]}"; fi
  echo "multi-candidate eval: $multi; $count candidates; a fresh --cache-dir per candidate"
  start=$(now)
  local file problem cache
  for name in $LATENCY_CANDIDATES; do
    file=$CANDIDATES/$name.py
    problem=$KB_DIR/level1/$name.py
    if [[ ! -f "$file" || ! -f "$problem" ]]; then
      echo "  ! $name: missing $file or $problem"
      continue
    fi
    if ! can_start "$start" "$LATENCY_BUDGET_S" $((2 * LATENCY_TIMEOUT_S)); then
      echo "  ! budget spent: $name not run"
      continue
    fi
    # Cold: an empty cache (no build, no reference outputs), except the device's measured
    # ceilings, a once-per-machine figure that the first candidate measures for all.
    cache=$dir/cache-$name
    rm -rf "$cache"
    mkdir -p "$cache"
    if [[ -d "$seed" ]]; then cp -r "$seed" "$cache/ceilings"; fi
    if [[ " ${big[*]} " == *" $name "* ]]; then no_reference_cache "$cache"; fi
    record "$dir/cold/$name.json" "$LATENCY_TIMEOUT_S" "$name" \
      "$MBLAST" eval "$problem" --candidate "$file" --json --cache-dir "$cache" \
      --timeout "$LATENCY_TIMEOUT_S" "${EVAL_ARGS[@]}"
    if [[ ! -d "$seed" && -d "$cache/ceilings" ]]; then cp -r "$cache/ceilings" "$seed"; fi
    # Warm: the same cache again (build and reference outputs cached).
    record "$dir/warm/$name.json" "$LATENCY_TIMEOUT_S" "$name" \
      "$MBLAST" eval "$problem" --candidate "$file" --json --cache-dir "$cache" \
      --timeout "$LATENCY_TIMEOUT_S" "${EVAL_ARGS[@]}"
    du -sh "$cache" 2>/dev/null | sed "s|$dir/||;s|^|   cache |"
    rm -rf "$cache"
  done
  echo "eval_latency: $(($(now) - start)) s"
  summarise latency latency.json
}

# ---------------------------------------------------------------------------------------------
section_timing() {
  local dir=$WORK_DIR/timing cache start p problem label
  echo
  echo "### timing (budget ${TIMING_BUDGET_S} s)"
  rm -rf "$dir"
  mkdir -p "$dir/mblast" "$dir/kb" "$dir/spread"
  cache=$dir/cache
  no_reference_cache "$cache"
  start=$(now)
  # The five spread runs first: they are one number that must not be lost to the budget.
  local spread_cand=$CANDIDATES/$SPREAD_CANDIDATE.py spread_problem=$KB_DIR/level1/$SPREAD_CANDIDATE.py
  printf '{"candidate": "%s", "problem": "%s", "runs": %s}\n' "$spread_cand" "$spread_problem" \
    "$SPREAD_RUNS" >"$dir/spread_meta.json"
  if [[ -f "$spread_cand" && -f "$spread_problem" ]]; then
    local i
    for ((i = 1; i <= SPREAD_RUNS; i++)); do
      if ! can_start "$start" "$TIMING_BUDGET_S" "$TIMING_TIMEOUT_S"; then
        echo "  ! budget spent: spread run $i not run"
        continue
      fi
      record "$dir/spread/run$i.json" "$TIMING_TIMEOUT_S" "run$i" \
        "$MBLAST" eval "$spread_problem" --candidate "$spread_cand" --json --cache-dir "$cache" \
        --seeds 1 --timeout "$TIMING_TIMEOUT_S" "${EVAL_ARGS[@]}"
    done
  else
    echo "  ! spread: missing $spread_cand or $spread_problem"
  fi
  summarise spread spread.json
  for p in $TIMING_PROBLEMS; do
    problem=$KB_DIR/$p.py
    label=${p//\//__}
    if [[ ! -f "$problem" ]]; then
      echo "  ! no problem $problem"
      continue
    fi
    if ! can_start "$start" "$TIMING_BUDGET_S" $((2 * TIMING_TIMEOUT_S)); then
      echo "  ! budget spent: $p not timed"
      continue
    fi
    record "$dir/mblast/$label.json" "$TIMING_TIMEOUT_S" "$label" \
      "$MBLAST" eval "$problem" --candidate "$problem" --json --cache-dir "$cache" \
      --seeds 1 --runs 100 --timeout "$TIMING_TIMEOUT_S" "${EVAL_ARGS[@]}"
    record "$dir/kb/$label.json" "$TIMING_TIMEOUT_S" "$label" \
      "$PYTHON" "$KB_TIMING" "$problem" --runs 100 --warmup 10
  done
  echo "timing: $(($(now) - start)) s"
  summarise timing timing.json
}

# ---------------------------------------------------------------------------------------------
section_coverage() {
  local dir=$WORK_DIR/coverage
  echo
  echo "### coverage (budget ${COVERAGE_BUDGET_S} s, ${COVERAGE_JOBS} at a time, ${COVERAGE_TIMEOUT_S} s each)"
  rm -rf "$dir"
  mkdir -p "$dir"
  no_reference_cache "$dir/cache"
  local budget=$COVERAGE_BUDGET_S left inner=$((COVERAGE_TIMEOUT_S - 10))
  left=$((DEADLINE_S - ($(now) - SCRIPT_START)))
  ((left < budget)) && budget=$left
  ((inner < 1)) && inner=1
  "$PYTHON" "$TOOLS" coverage "$WORK_DIR" "$KB_DIR" --jobs "$COVERAGE_JOBS" \
    --big-jobs "$COVERAGE_BIG_JOBS" --timeout "$COVERAGE_TIMEOUT_S" --budget "$budget" \
    --levels "$COVERAGE_LEVELS" -- \
    "$MBLAST" --json --seeds 2 --runs 5 --cache-dir "$dir/cache" \
    --timeout "$inner" "${EVAL_ARGS[@]}" ||
    echo "run_issue3: the coverage runner failed; partial records are in $dir/records"
  summarise coverage-summary coverage.json
}

environment
for section in "${SECTIONS[@]}"; do
  "section_$section" || echo "run_issue3: section $section failed; continuing"
done
# The caches hold gigabytes of reference outputs; only the records and summaries come back, as one
# archive (the device tool returns at most 8 files, no more than 2 folders down).
rm -rf "$WORK_DIR"/eval_latency/cache-* "$WORK_DIR"/timing/cache "$WORK_DIR"/coverage/cache
parts=()
for part in eval_latency timing coverage; do
  [[ -d "$WORK_DIR/$part" ]] && parts+=("$part")
done
if [[ ${#parts[@]} -gt 0 ]]; then
  tar -czf "$OUT_DIR/records.tar.gz" -C "$WORK_DIR" "${parts[@]}" ||
    echo "run_issue3: could not archive the records in $WORK_DIR"
fi
echo
files=("$OUT_DIR"/*)
echo "run_issue3: done in $(($(now) - SCRIPT_START)) s; in $OUT_DIR: ${files[*]##*/}"
# Let tee write the last lines before the script ends.
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null || true
