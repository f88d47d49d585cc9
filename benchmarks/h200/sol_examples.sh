#!/usr/bin/env bash
# SOL-ExecBench's example problems on the GPU (issue 25, items 2, 4 and 5). Per example: the
# reference judged against itself (the control, expect 1.00x), every solution.json judged by
# `mblast eval` (those that cannot run there are reported with the reason), one `mblast optimize`
# run with no LLM, and, where SOL-ExecBench's own harness imports, its timing of the same
# solutions. The examples are data: copy them into .kb first (not tracked) and carry it:
#
#   mkdir -p .kb && cp -r ../shared/sol_execbench/examples .kb/sol_examples
#   cp -r ../shared/sol_execbench/src .kb/sol_src                 # its harness, for item 4
#   OUT=DIR benchmarks/h200/sol_examples.sh                        # carry [".device", ".kb"]
#
# Environment: MINUTES per optimize run (1.0), EXAMPLES (default: every example folder), DEVICE
# (cuda), MBLAST (.device/mblast; build/mblast with DEVICE=cpu for a try on the CPU). Prints a
# table and writes DIR/sol_examples.jsonl (one line per judged candidate, with its flags and notes),
# DIR/sol_run-EXAMPLE.tgz per optimize run as it ends, and DIR/sol_harness.tgz. The 11 examples do
# not fit one device call (call 69: four in 530 s at MINUTES=0.5): split them with EXAMPLES, e.g.
# EXAMPLES="$(ls -d .kb/sol_examples/*/*/ | sed -n 5,8p)".
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.device/lib
command -v bwrap >/dev/null || export PATH=$PWD/.device/bin:$PATH
out=${OUT:?set OUT to a folder for the results}
mblast=${MBLAST:-.device/mblast}
device=${DEVICE:-cuda}
mkdir -p "$out"
work=$(mktemp -d)
lines="$out/sol_examples.jsonl"
: >"$lines"
examples=(${EXAMPLES:-$(ls -d .kb/sol_examples/*/*/)})

judge() {  # judge DIR CANDIDATE LABEL
  local json
  json=$(timeout 900 "$mblast" eval "$1" --candidate "$2" --device "$device" --json --cache-dir "$work/cache" 2>"$work/err.txt")
  python3 - "$1" "$3" "$json" "$work/err.txt" >>"$lines" <<'PY'
import json, sys
problem, label, raw, err = sys.argv[1:5]


def brief(text):  # a build error's cause is at its end (nvcc's "fatal error: ..."): keep both ends
    return text if len(text) <= 1200 else text[:300] + " [...] " + text[-900:]


try:
    r = json.loads(raw)
except json.JSONDecodeError:
    r = {"correct": False, "error": open(err).read().strip()}
print(json.dumps({"problem": problem.rstrip("/").split("/", 2)[-1], "candidate": label,
                  "correct": r.get("correct"), "speedup": r.get("speedup"), "ref_ms": r.get("ref_ms"),
                  "cand_ms": r.get("cand_ms"), "sol_ms": r.get("sol_ms"), "sol_score": r.get("sol_score"),
                  "workloads": len(r.get("workloads") or []), "error": brief(r.get("error") or ""),
                  "workload_speedups": [w.get("speedup") for w in (r.get("workloads") or [])],
                  "flags": r.get("flags") or [], "notes": [n[:300] for n in (r.get("notes") or [])]}))
PY
}

for dir in "${examples[@]}"; do
  dir=${dir%/}
  judge "$dir" "$dir" reference
  for solution in "$dir"/solution*.json; do
    judge "$dir" "$solution" "$(basename "$solution" .json)"
  done
  name=$(echo "$dir" | tr / _)
  limit=$(awk -v m="${MINUTES:-1.0}" 'BEGIN { print int(m * 60) + 180 }')
  timeout "$limit" "$mblast" optimize "$dir" --device "$device" --llm none --time-limit "${MINUTES:-1.0}" \
    --kb "$work/kb.sqlite" --out "$work/runs/$name" --cache-dir "$work/cache" --json \
    >"$work/$name.optimize.json" 2>"$work/$name.optimize.err"
  # Each example's run as soon as it ends: a call cut by its time limit keeps what finished.
  tar czf "$out/sol_run-$name.tgz" -C "$work" "runs/$name" "$name.optimize.json" "$name.optimize.err" 2>/dev/null
  python3 - "$dir" "$work/$name.optimize.json" "$work/runs/$name/evaluations.jsonl" >>"$lines" <<'PY'
import json, re, sys
try:
    r = json.load(open(sys.argv[2]))
except (OSError, json.JSONDecodeError):
    r = {}
judged = []  # each evaluation's candidate (its stem: "+cuda_graph" where judged inside a graph)
try:
    for line in open(sys.argv[3]):
        e = json.loads(line)
        stem = re.sub(r"^(s\d+-)?(.*?)(-[0-9a-f]{12})?\.py$", r"\2", e.get("candidate", "?"))
        judged.append([stem, e.get("speedup") if e.get("correct") else e.get("error_kind") or "incorrect"])
except (OSError, json.JSONDecodeError):
    pass
print(json.dumps({"problem": sys.argv[1].rstrip("/").split("/", 2)[-1], "candidate": "optimize",
                  "correct": r.get("correct"), "speedup": r.get("best_speedup"), "technique": r.get("best_technique"),
                  "vs_compile": r.get("speedup_vs_compile"), "sol_score": r.get("sol_score"),
                  "evaluations": r.get("evaluations"), "judged": judged,
                  "error": r.get("stop_reason", "no result")}))
PY
done

# Item 4: SOL-ExecBench's own harness, where its Python dependencies import here.
python3 - <<'PY' >"$out/sol_harness_deps.txt" 2>&1
import importlib
for m in ("pydantic", "click", "rich", "safetensors", "cupti", "cuda.tile", "cudnn", "cutlass", "tvm_ffi",
          "torch_c_dlpack_ext", "datasets", "triton"):
    try:
        importlib.import_module(m)
        print(f"{m}: ok")
    except Exception as exc:  # noqa: BLE001
        print(f"{m}: missing ({type(exc).__name__}: {str(exc)[:80]})")
PY
if PYTHONPATH=.kb/sol_src python3 -c "import sol_execbench.cli" 2>>"$out/sol_harness_deps.txt"; then
  for dir in "${examples[@]}"; do
    for solution in "${dir%/}"/solution*.json; do
      PYTHONPATH=.kb/sol_src timeout 600 python3 -m sol_execbench.cli "${dir%/}" --solution "$solution" --json \
        >"$work/harness-$(echo "$solution" | tr / _).json" 2>&1
    done
  done
fi
(cd "$work" && ls harness-*.json >/dev/null 2>&1) && tar czf "$out/sol_harness.tgz" -C "$work" $(cd "$work" && ls harness-*.json)
echo "SOL-ExecBench harness dependencies:"; sed 's/^/  /' "$out/sol_harness_deps.txt"
python3 - "$lines" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'problem':34} {'candidate':26} {'ok':>3} {'speedup':>8} {'SOL':>6} {'wl':>3}  note")
for r in rows:
    sp = f"{r['speedup']:.3f}" if isinstance(r.get("speedup"), (int, float)) else "-"
    sc = f"{r['sol_score']:.3f}" if isinstance(r.get("sol_score"), (int, float)) else "-"
    note = r.get("technique") or (r.get("error") or "")[:70]
    per = [v for v in r.get("workload_speedups") or [] if isinstance(v, (int, float))]
    if len(per) > 1 and not note:  # how far the workloads' own speedups spread around the geometric mean
        note = f"workloads {min(per):.3f}-{max(per):.3f}"
    print(f"{r['problem'][:34]:34} {r['candidate'][:26]:26} {'yes' if r.get('correct') else 'no':>3} {sp:>8} {sc:>6} "
          f"{r.get('workloads', '') or '':>3}  {note}")
    if r.get("judged"):
        print("    judged in order: " + ", ".join(
            f"{stem} {v:.3f}" if isinstance(v, (int, float)) else f"{stem} {v}" for stem, v in r["judged"]))
PY
