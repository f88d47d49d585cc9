"""Helpers of run_issue3.sh (issue 3's H200 benchmarks): run one `mblast eval` with a time limit and
record it, and summarise the records as short tables plus JSON files. Standard library only.

    issue3_tools.py run RECORD.json [--timeout S] [--label L] -- COMMAND...
    issue3_tools.py latency OUT_DIR                 # eval_latency/{cold,warm}/*.json -> latency.json
    issue3_tools.py timing OUT_DIR                  # timing/{mblast,kb}/*.json -> timing.json
    issue3_tools.py spread OUT_DIR                  # timing/spread/*.json -> spread.json
    issue3_tools.py coverage OUT_DIR KB_DIR [--jobs 4] [--timeout 120] [--budget S] -- MBLAST_ARGS...
    issue3_tools.py coverage-summary OUT_DIR        # coverage/records/*.json -> coverage.json
    issue3_tools.py sizes PROBLEM.py...             # "NAME ELEMENTS" of get_inputs() per line

A record is one JSON object: the command, its exit status, wall seconds, whether it timed out, the
result object `mblast eval --json` printed (or null) and the last lines of its stderr.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

LATENCY_TARGET_COLD_S = 3.0
LATENCY_TARGET_WARM_S = 1.5
TIMING_TARGET_PCT = 5.0
SPREAD_TARGET_PCT = 2.0
STDERR_TAIL = 4000

# ---------------------------------------------------------------------------------------------
# Running one command


def _children(pid: int) -> List[int]:
    """Every descendant of pid, found through /proc (the worker leaves mblast's process group)."""
    parents: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    for pid in [proc.pid, *_children(proc.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def parse_result(stdout: str) -> Optional[Any]:
    """The JSON that `mblast eval --json` printed: the whole text, else from the first line that
    opens an object or array."""
    text = stdout.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("{") or line.startswith("["):
            try:
                return json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
    return None


def run_command(command: Sequence[str], timeout: float) -> Dict[str, Any]:
    start = time.monotonic()
    proc = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_tree(proc)
        out, err = proc.communicate()
    wall = time.monotonic() - start
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    return {
        "command": list(command),
        "rc": proc.returncode,
        "timed_out": timed_out,
        "wall_s": round(wall, 3),
        "result": parse_result(stdout),
        "stdout_tail": stdout[-STDERR_TAIL:] if parse_result(stdout) is None else "",
        "stderr_tail": stderr[-STDERR_TAIL:],
    }


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def cmd_run(argv: List[str]) -> int:
    if "--" not in argv:
        sys.stderr.write("usage: issue3_tools.py run RECORD.json [--timeout S] [--label L] -- CMD\n")
        return 2
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    if not opts or not command:
        sys.stderr.write("run: need RECORD.json and a command\n")
        return 2
    record_path = Path(opts[0])
    timeout, label = 120.0, ""
    i = 1
    while i < len(opts):
        if opts[i] == "--timeout" and i + 1 < len(opts):
            timeout, i = float(opts[i + 1]), i + 2
        elif opts[i] == "--label" and i + 1 < len(opts):
            label, i = opts[i + 1], i + 2
        else:
            sys.stderr.write(f"run: unknown option {opts[i]}\n")
            return 2
    record = run_command(command, timeout)
    record["label"] = label
    write_json(record_path, record)
    return 0


# ---------------------------------------------------------------------------------------------
# Reading records


def load_records(folder: Path) -> List[Dict[str, Any]]:
    records = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = {"rc": None, "result": None, "stderr_tail": f"unreadable record {path}"}
        record.setdefault("label", path.stem)
        if not record["label"]:
            record["label"] = path.stem
        records.append(record)
    return records


def results_of(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The result objects of a record: one for the single-candidate form; a list, or an object with
    "results"/"candidates", for a multi-candidate form."""
    result = record.get("result")
    if isinstance(result, list):
        return [r for r in result if isinstance(r, dict)]
    if isinstance(result, dict):
        for key in ("results", "candidates"):
            if isinstance(result.get(key), list) and all(isinstance(r, dict) for r in result[key]):
                return list(result[key])
        return [result]
    return []


def first_result(record: Dict[str, Any]) -> Dict[str, Any]:
    results = results_of(record)
    return results[0] if results else {}


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def build_seconds(result: Dict[str, Any]) -> Optional[float]:
    if number(result.get("build_seconds")) is not None:
        return number(result.get("build_seconds"))
    builds = result.get("builds")
    if isinstance(builds, list):
        return round(sum(number(b.get("seconds")) or 0.0 for b in builds if isinstance(b, dict)), 3)
    return None


def eval_seconds(result: Dict[str, Any]) -> Optional[float]:
    for key in ("eval_seconds", "wall_seconds"):
        if number(result.get(key)) is not None:
            return number(result.get(key))
    return None


def error_text(record: Dict[str, Any]) -> str:
    """Why a record is not a clean result, in a few lines."""
    result = first_result(record)
    if record.get("timed_out"):
        return f"timed out after {record.get('wall_s')} s (killed by run_issue3.sh)"
    if result.get("error"):
        return str(result["error"])
    if record.get("rc") not in (0, None) and not result:
        tail = (record.get("stderr_tail") or record.get("stdout_tail") or "").strip()
        return f"exit {record.get('rc')}: {tail[-1500:] or 'no output'}"
    if result and not result.get("correct", False):
        flags = result.get("flags") or []
        return (f"incorrect: max_abs_err {result.get('max_abs_err')}, "
                f"max_rel_err {result.get('max_rel_err')}, flags {flags}")
    if not result:
        tail = (record.get("stderr_tail") or "").strip()
        return f"no JSON result (exit {record.get('rc')}): {tail[-1500:]}"
    return ""


def quantile(values: Sequence[float], q: float) -> Optional[float]:
    """Linear interpolation between closest ranks (numpy's default)."""
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def fmt(value: Optional[float], spec: str = ".3f") -> str:
    """format(value, spec), or "-" padded to the spec's width."""
    if value is None:
        digits = ""
        for ch in spec.lstrip("+-<>^ "):
            if not ch.isdigit():
                break
            digits += ch
        return "-".rjust(int(digits) if digits else 1)
    return format(value, spec)


def verdict(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


# ---------------------------------------------------------------------------------------------
# Sections


def cmd_latency(argv: List[str]) -> int:
    out = Path(argv[0])
    summary: Dict[str, Any] = {"targets": {"cold_p50_s": LATENCY_TARGET_COLD_S,
                                           "warm_p50_s": LATENCY_TARGET_WARM_S}}
    meta_path = out / "eval_latency" / "meta.json"
    if meta_path.is_file():
        summary["meta"] = json.loads(meta_path.read_text())
    rows: Dict[str, Dict[str, Any]] = {}
    no_ref_cache = set(summary.get("meta", {}).get("no_reference_cache", []))
    for phase in ("cold", "warm"):
        process_s, internal_s = [], []
        for record in load_records(out / "eval_latency" / phase):
            results = results_of(record)
            if len(results) > 1:  # one process judged several candidates
                entries = []
                for k, r in enumerate(results):
                    stem = Path(str(r.get("candidate", "?"))).stem
                    if any(e[0] == stem for e in entries):
                        stem = f"{stem}#{k}"
                    entries.append((stem, r, eval_seconds(r), None))
            else:
                entries = [(record["label"], first_result(record), None, record.get("wall_s"))]
            for name, result, internal, wall in entries:
                internal = internal if internal is not None else eval_seconds(result)
                row = rows.setdefault(name, {"candidate": name,
                                             "reference_cache": name not in no_ref_cache})
                row[phase] = {
                    "process_s": wall,
                    "eval_s": internal,
                    "build_s": build_seconds(result),
                    "worker_wait_s": number(result.get("worker_wait_seconds")),
                    "phase_seconds": result.get("phase_seconds"),
                    "correct": bool(result.get("correct", False)),
                    "speedup": number(result.get("speedup")),
                    "error": error_text(record) if not result.get("correct", False) else "",
                }
                # Only correct evaluations count: a failure can end early (or at a timeout).
                if result.get("correct", False):
                    if wall is not None:
                        process_s.append(float(wall))
                    if internal is not None:
                        internal_s.append(internal)
        target = LATENCY_TARGET_COLD_S if phase == "cold" else LATENCY_TARGET_WARM_S
        p50 = quantile(process_s, 0.5)
        e50 = quantile(internal_s, 0.5)
        summary[phase] = {
            "process_p50_s": p50, "process_p90_s": quantile(process_s, 0.9),
            "eval_p50_s": e50, "eval_p90_s": quantile(internal_s, 0.9),
            "count": max(len(process_s), len(internal_s)),
            "failed": sum(1 for r in rows.values() if phase in r and not r[phase]["correct"]),
            "target_p50_s": target,
            "meets_target_process": None if p50 is None else p50 <= target,
            "meets_target_eval": None if e50 is None else e50 <= target,
        }
    summary["candidates"] = list(rows.values())
    write_json(out / "latency.json", summary)

    print("== eval_latency: seconds per candidate evaluation (build + verify + time)")
    print("   process = mblast start to exit; eval = the result's own eval_seconds/wall_seconds")
    print(f"{'candidate':40s} {'cold proc':>9s} {'cold eval':>9s} {'build':>6s} "
          f"{'warm proc':>9s} {'warm eval':>9s} {'ok':>5s} {'speedup':>8s}")
    for row in rows.values():
        cold, warm = row.get("cold", {}), row.get("warm", {})
        ok = cold.get("correct") and warm.get("correct", cold.get("correct"))
        mark = "" if row["reference_cache"] else "*"
        print(f"{(row['candidate'][:39] + mark):40s} {fmt(cold.get('process_s'), '9.2f')} "
              f"{fmt(cold.get('eval_s'), '9.2f')} {fmt(cold.get('build_s'), '6.2f')} "
              f"{fmt(warm.get('process_s'), '9.2f')} {fmt(warm.get('eval_s'), '9.2f')} "
              f"{'yes' if ok else 'NO':>5s} {fmt(warm.get('speedup') or cold.get('speedup'), '8.3f')}")
    if no_ref_cache:
        print("   * reference outputs not cached (too large for the disk): warm = build cached only")
    for phase in ("cold", "warm"):
        s = summary[phase]
        print(f"{phase} ({s['count']} correct, {s['failed']} failed): "
              f"process p50 {fmt(s['process_p50_s'], '.2f')} s p90 "
              f"{fmt(s['process_p90_s'], '.2f')} s; eval p50 {fmt(s['eval_p50_s'], '.2f')} s p90 "
              f"{fmt(s['eval_p90_s'], '.2f')} s; target p50 <= {s['target_p50_s']} s: "
              f"process {verdict(s['meets_target_process'])}, eval {verdict(s['meets_target_eval'])}")
    for row in rows.values():
        for phase in ("cold", "warm"):
            err = row.get(phase, {}).get("error")
            if err:
                print(f"  ! {row['candidate']} ({phase}): {one_line(err)}")
    return 0


def one_line(text: str, limit: int = 300) -> str:
    flat = " | ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[:limit] + " ..."


def cmd_timing(argv: List[str]) -> int:
    out = Path(argv[0])
    mblast = {r["label"]: r for r in load_records(out / "timing" / "mblast")}
    kb = {r["label"]: r for r in load_records(out / "timing" / "kb")}
    rows = []
    for name in sorted(set(mblast) | set(kb)):
        m = first_result(mblast.get(name, {}))
        k = kb.get(name, {}).get("result") or {}
        ref_ms = number(m.get("ref_ms"))
        kb_mean = number(k.get("mean_ms")) if isinstance(k, dict) else None
        kb_median = number(k.get("median_ms")) if isinstance(k, dict) else None
        diff = None if ref_ms is None or not kb_mean else (ref_ms - kb_mean) / kb_mean * 100.0
        diff_med = None if ref_ms is None or not kb_median else (ref_ms - kb_median) / kb_median * 100.0
        errors = []
        if ref_ms is None:
            errors.append("mblast: " + one_line(error_text(mblast.get(name, {"result": None}))))
        if kb_mean is None:
            rec = kb.get(name, {})
            errors.append("kernelbench_timing: " + one_line(
                f"exit {rec.get('rc')}: {(rec.get('stderr_tail') or '').strip()[-600:]}"))
        timing = m.get("timing") if isinstance(m.get("timing"), dict) else {}
        ref_stats = timing.get("ref") if isinstance(timing.get("ref"), dict) else {}
        ref_mean = number(ref_stats.get("mean_ms"))
        diff_mean = None if ref_mean is None or not kb_mean else (ref_mean - kb_mean) / kb_mean * 100.0
        rows.append({"problem": name, "mblast_ref_ms": ref_ms, "mblast_ref_mean_ms": ref_mean,
                     "mblast_ref_stats": ref_stats or None,
                     "kb_mean_ms": kb_mean, "kb_median_ms": kb_median,
                     "diff_pct": diff, "diff_pct_mean_vs_mean": diff_mean,
                     "diff_pct_median_vs_median": diff_med,
                     "within_target": None if diff is None else abs(diff) <= TIMING_TARGET_PCT,
                     "errors": errors})
    measured = [r for r in rows if r["within_target"] is not None]
    summary = {"target_pct": TIMING_TARGET_PCT, "problems": rows,
               "within": sum(1 for r in measured if r["within_target"]), "measured": len(measured),
               "max_abs_diff_pct": max((abs(r["diff_pct"]) for r in measured), default=None)}
    write_json(out / "timing.json", summary)
    print("== timing agreement: mblast eager ref_ms (median of its runs) vs KernelBench-style mean")
    print(f"{'problem':46s} {'mblast ms':>10s} {'kb mean':>10s} {'diff %':>7s} "
          f"{'mb mean':>10s} {'diff %':>7s}")
    for r in rows:
        print(f"{r['problem'][:46]:46s} {fmt(r['mblast_ref_ms'], '10.4f')} "
              f"{fmt(r['kb_mean_ms'], '10.4f')} {fmt(r['diff_pct'], '+7.2f')} "
              f"{fmt(r['mblast_ref_mean_ms'], '10.4f')} {fmt(r['diff_pct_mean_vs_mean'], '+7.2f')}"
              f"{'' if r['within_target'] is not False else '  <- outside +-5 %'}")
        for e in r["errors"]:
            print(f"  ! {e}")
    print(f"within +-{TIMING_TARGET_PCT:g} % (vs mean): {summary['within']}/{summary['measured']}; "
          f"max |diff| {fmt(summary['max_abs_diff_pct'], '.2f')} %")
    return 0


def cmd_spread(argv: List[str]) -> int:
    out = Path(argv[0])
    records = load_records(out / "timing" / "spread")
    speedups, runs = [], []
    for record in records:
        result = first_result(record)
        s = number(result.get("speedup"))
        runs.append({"label": record["label"], "speedup": s, "ref_ms": number(result.get("ref_ms")),
                     "cand_ms": number(result.get("cand_ms")), "correct": result.get("correct"),
                     "error": "" if s is not None else one_line(error_text(record))})
        if s is not None:
            speedups.append(s)
    median = statistics.median(speedups) if speedups else None
    spread = ((max(speedups) - min(speedups)) / median * 100.0) if speedups and median else None
    meta_path = out / "timing" / "spread_meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    # A verdict only when every planned run gave a speedup (at least two).
    complete = len(speedups) >= max(2, int(meta.get("runs", 0) or 0))
    summary = {"target_pct": SPREAD_TARGET_PCT, "runs": runs, "median": median,
               "spread_pct": spread,
               "meets_target": None if spread is None or not complete else spread <= SPREAD_TARGET_PCT,
               "meta": meta}
    write_json(out / "spread.json", summary)
    print(f"== speedup spread: {len(speedups)} of {meta.get('runs', '?')} separate mblast runs of "
          f"{Path(str(meta.get('candidate', '?'))).name} gave a speedup")
    print("   speedups: " + ", ".join(fmt(r["speedup"], ".4f") for r in runs))
    print(f"   median {fmt(median, '.4f')}; spread (max-min)/median {fmt(spread, '.2f')} %; "
          f"target <= {SPREAD_TARGET_PCT:g} %: {verdict(summary['meets_target'])}")
    for r in runs:
        if r["error"]:
            print(f"  ! {r['label']}: {r['error']}")
    return 0


# ---------------------------------------------------------------------------------------------
# Coverage


def input_sizes(problems: Sequence[Path]) -> Dict[str, Optional[int]]:
    """input_elements of every problem, in one Python process (torch imports once)."""
    code = (
        "import importlib.util, json, sys, torch\n"
        "for n in ('rand', 'randn', 'randint', 'empty', 'ones', 'zeros', 'full', 'arange'):\n"
        "    f = getattr(torch, n)\n"
        "    setattr(torch, n, (lambda f: lambda *a, **k: f(*a, **{**k, 'device': 'meta'}))(f))\n"
        "sizes = {}\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        spec = importlib.util.spec_from_file_location('p', path)\n"
        "        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "        sizes[path] = sum(x.numel() for x in m.get_inputs() if isinstance(x, torch.Tensor))\n"
        "    except BaseException:\n"
        "        sizes[path] = None\n"
        "print(json.dumps(sizes))\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code, *map(str, problems)],
                              capture_output=True, text=True, timeout=120)
        sizes = json.loads(done.stdout.strip().splitlines()[-1])
        return {str(p): sizes.get(str(p)) for p in problems}
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return {str(p): None for p in problems}


def problem_list(kb_dir: Path, levels: Sequence[str]) -> Tuple[List[Path], Dict[str, Optional[int]]]:
    """Every problem of the levels, smallest inputs first, so that a budget that runs out leaves
    out the fewest problems; problems of unknown size go last. Ties keep a fixed shuffled order."""
    problems = [p for level in levels for p in sorted((kb_dir / level).glob("*.py"))]
    random.Random(3).shuffle(problems)
    sizes = input_sizes(problems)
    problems.sort(key=lambda p: (sizes[str(p)] is None, sizes[str(p)] or 0))
    return problems, sizes


def coverage_label(problem: Path) -> str:
    return f"{problem.parent.name}__{problem.stem}"


def classify(record: Dict[str, Any]) -> str:
    if record.get("not_run"):
        return "not_run"
    result = first_result(record)
    if result.get("correct") is True and not result.get("error"):
        return "correct"
    if result and not result.get("error") and not record.get("timed_out"):
        return "incorrect"
    return "error"


def cmd_coverage(argv: List[str]) -> int:
    if "--" not in argv:
        sys.stderr.write("usage: coverage OUT_DIR KB_DIR [opts] -- MBLAST [EVAL_ARGS...]\n")
        return 2
    split = argv.index("--")
    opts, mblast_args = argv[:split], argv[split + 1:]
    out, kb_dir = Path(opts[0]), Path(opts[1])
    jobs, timeout, budget, levels = 4, 120.0, 480.0, ["level1", "level2"]
    big_jobs, big_elements = 2, 500_000_000
    i = 2
    while i < len(opts):
        key, value = opts[i], opts[i + 1] if i + 1 < len(opts) else None
        if value is None:
            sys.stderr.write(f"coverage: {key} needs a value\n")
            return 2
        if key == "--jobs":
            jobs = int(value)
        elif key == "--timeout":
            timeout = float(value)
        elif key == "--budget":
            budget = float(value)
        elif key == "--levels":
            levels = value.split(",")
        elif key == "--big-jobs":
            big_jobs = int(value)
        elif key == "--big-elements":
            big_elements = int(value)
        else:
            sys.stderr.write(f"coverage: unknown option {key}\n")
            return 2
        i += 2
    records_dir = out / "coverage" / "records"
    records_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    problems, sizes = problem_list(kb_dir, levels)
    # Problems with huge inputs need tens of GB of GPU memory each (fp32 inputs, float64
    # reference); at most big_jobs of them run at once.
    big = threading.Semaphore(max(1, big_jobs))
    # No new problem starts once less than one per-problem timeout is left, so the section ends
    # within the budget (plus the start-up of the last few).
    last_start = max(0.0, budget - timeout)
    lock = threading.Lock()
    done = [0]

    def judge(problem: Path, attempt: str) -> Dict[str, Any]:
        path = records_dir / f"{coverage_label(problem)}.json"
        if time.monotonic() - started > last_start:
            record = {"label": coverage_label(problem), "problem": str(problem), "not_run": True,
                      "rc": None, "result": None, "stderr_tail": "time budget spent",
                      "input_elements": sizes.get(str(problem))}
        else:
            command = [*mblast_args[:1], "eval", str(problem), "--candidate", str(problem),
                       *mblast_args[1:]]
            elements = sizes.get(str(problem))
            heavy = elements is None or elements > big_elements
            if heavy:
                big.acquire()
            try:
                if time.monotonic() - started > last_start:  # the wait for a slot took it
                    record = {"not_run": True, "rc": None, "result": None,
                              "stderr_tail": "time budget spent"}
                else:
                    record = run_command(command, timeout)
            finally:
                if heavy:
                    big.release()
            record.update(label=coverage_label(problem), problem=str(problem), attempt=attempt,
                          input_elements=elements)
        write_json(path, record)
        with lock:
            done[0] += 1
            if done[0] % 20 == 0:
                print(f"   coverage: {done[0]} judged, {time.monotonic() - started:.0f} s",
                      flush=True)
        return record

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        records = list(pool.map(lambda p: judge(p, "parallel"), problems))
    # Errors (not wrong answers) once more, alone on the GPU: running four at a time can exhaust
    # its memory or time out where one alone would not. Both attempts are kept.
    retry = [p for p, r in zip(problems, records) if classify(r) == "error"]
    for problem in retry:
        first = json.loads((records_dir / f"{coverage_label(problem)}.json").read_text())
        second = judge(problem, "serial retry")
        if classify(second) == "not_run":
            write_json(records_dir / f"{coverage_label(problem)}.json", first)
            continue
        second["first_attempt"] = {k: first.get(k) for k in ("rc", "timed_out", "wall_s")}
        second["first_attempt"]["error"] = error_text(first)
        write_json(records_dir / f"{coverage_label(problem)}.json", second)
    meta = {"jobs": jobs, "big_jobs": big_jobs, "big_elements": big_elements,
            "timeout_s": timeout, "budget_s": budget, "levels": levels,
            "sizes_known": sum(1 for v in sizes.values() if v is not None),
            "retried_serially": [coverage_label(p) for p in retry],
            "section_seconds": round(time.monotonic() - started, 1)}
    write_json(out / "coverage" / "meta.json", meta)
    return 0


def cmd_coverage_summary(argv: List[str]) -> int:
    out = Path(argv[0])
    records = load_records(out / "coverage" / "records")
    meta_path = out / "coverage" / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    counts = {"correct": 0, "incorrect": 0, "error": 0, "not_run": 0}
    by_level: Dict[str, Dict[str, int]] = {}
    failures, problems = [], []
    for record in records:
        kind = classify(record)
        counts[kind] += 1
        level = record["label"].split("__", 1)[0]
        by_level.setdefault(level, {k: 0 for k in counts})[kind] += 1
        result = first_result(record)
        entry = {"problem": record["label"], "status": kind, "wall_s": record.get("wall_s"),
                 "ref_ms": number(result.get("ref_ms")), "attempt": record.get("attempt")}
        if kind in ("incorrect", "error"):
            entry["error"] = error_text(record)
            entry["error_kind"] = result.get("error_kind")
            if record.get("first_attempt"):
                entry["first_attempt"] = record["first_attempt"]
            failures.append(entry)
        problems.append(entry)
    summary = {"total": len(records), **counts, "by_level": by_level, "meta": meta,
               "failures": failures, "problems": problems}
    write_json(out / "coverage.json", summary)
    print(f"== coverage: each problem judged against itself ({meta.get('jobs', '?')} at a time, "
          f"{meta.get('section_seconds', '?')} s)")
    print(f"total {len(records)}: correct {counts['correct']}, incorrect {counts['incorrect']}, "
          f"error {counts['error']}, not run (budget) {counts['not_run']}")
    for level, c in sorted(by_level.items()):
        print(f"  {level}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    # Keep the printed list short: the device tool returns only the output's tail.
    for f in failures[:30]:
        print(f"  ! {f['problem']} [{f['status']}]: {one_line(f['error'], 200)}")
    if len(failures) > 30:
        print(f"  ... {len(failures) - 30} more in coverage.json")
    print(f"coverage: {counts['correct']}/{len(records)} correct "
          f"(incorrect {counts['incorrect']}, error {counts['error']}, not run {counts['not_run']})")
    return 0


def cmd_sizes(argv: List[str]) -> int:
    for path, elements in input_sizes([Path(a) for a in argv]).items():
        print(Path(path).stem, -1 if elements is None else elements)
    return 0


def main(argv: List[str]) -> int:
    commands = {"sizes": cmd_sizes, "run": cmd_run, "latency": cmd_latency, "timing": cmd_timing,
                "spread": cmd_spread, "coverage": cmd_coverage,
                "coverage-summary": cmd_coverage_summary}
    if not argv or argv[0] not in commands:
        sys.stderr.write(__doc__ or "")
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
