"""Nsight Compute numbers for the candidate's signature (request "profiler": "ncu").

ncu runs the candidate's forward in a child process (ncu_target.py) and profiles the kernels of one
forward, the ones inside the NVTX range ncu_target.RANGE, at most `launch_count` of them. Its raw
CSV page is parsed into one KernelRow per profiled launch, and aggregate() turns the rows into the
signature's "ncu"."metrics": time-weighted means over the profiled kernels (weights: each kernel's
gpu__time_duration), fractions in 0..1. A metric this ncu or GPU does not know is missing, never 0.
"""

import csv
import glob
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import torch

from . import guards
from .ncu_target import RANGE, TargetSpec
from .signature import TOP_N

DURATION = "gpu__time_duration.sum"
HMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
# Every tensor-pipe cycle, warpgroup mma (Hopper's wgmma) included: ncu 2025.3 on the H200 knows no
# sm__pipe_tensor_op_gmma_cycles_active (session 22), and the hmma pipe does not count wgmma.
TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
LOCAL_LD = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
LOCAL_ST = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
SECTOR_BYTES = 32

# Signature key -> the percent metrics it is made of (the larger of those a kernel has).
FRACTIONS: Dict[str, Tuple[str, ...]] = {
    "dram_throughput_fraction": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
    "l2_throughput_fraction": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "sm_throughput_fraction": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory_throughput_fraction": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "tensor_pipe_fraction": (HMMA, TENSOR),
    "achieved_occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "global_load_efficiency": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",),
    "branch_efficiency": ("smsp__sass_average_branch_targets_threads_uniform.pct",),
}
KERNEL_FRACTIONS = ("dram_throughput_fraction", "sm_throughput_fraction", "tensor_pipe_fraction",
                    "achieved_occupancy")

STALL_REASONS = ("long_scoreboard", "lg_throttle", "drain", "tex_throttle", "imc_miss", "barrier", "membar", "wait",
                 "short_scoreboard", "mio_throttle", "math_pipe_throttle", "not_selected", "selected",
                 "no_instruction", "dispatch_stall", "branch_resolving", "sleeping")
# Signature key -> the stall reasons it sums, over the sum of every stall reason present.
STALL_GROUPS: Dict[str, Tuple[str, ...]] = {
    "stall_memory_fraction": ("long_scoreboard", "lg_throttle", "drain", "tex_throttle", "imc_miss"),
    "stall_sync_fraction": ("barrier", "membar"),
    "stall_exec_dependency_fraction": ("wait", "short_scoreboard"),
    "stall_math_fraction": ("math_pipe_throttle", "mio_throttle"),
}


def stall_metric(reason: str) -> str:
    return f"smsp__warp_issue_stalled_{reason}_per_warp_active.pct"


METRICS: Tuple[str, ...] = (
    DURATION,
    *(m for names in FRACTIONS.values() for m in names),
    DRAM_READ, DRAM_WRITE, LOCAL_LD, LOCAL_ST,
    *(stall_metric(r) for r in STALL_REASONS),
)

NOT_CUDA = "ncu needs a CUDA device; the signature has the PyTorch profiler's numbers only"
NOT_FOUND = "ncu not found: install Nsight Compute or set MBLAST_NCU to its path"

# ---- parsing the raw CSV page -------------------------------------------------------------------

# The raw page's columns that describe a launch rather than measure it.
_INFO_COLUMNS = frozenset({"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name",
                           "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"})
_TIME_TO_NS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
_PREFIXES = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass
class KernelRow:
    name: str
    # metric -> value in base units (ns, bytes, sectors, %); a metric without a number is absent
    values: Dict[str, float] = field(default_factory=dict)


def _number(text: str) -> Optional[float]:
    cleaned = text.strip().replace(",", "")
    if not cleaned or cleaned.lower() == "n/a":
        return None
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _unit_scale(unit: str) -> float:
    """To base units, should ncu have scaled a column despite --print-units base."""
    unit = unit.strip()
    if unit in _TIME_TO_NS:
        return _TIME_TO_NS[unit]
    if len(unit) > 1 and unit[0] in _PREFIXES and unit[1:] in ("byte", "sector"):
        return _PREFIXES[unit[0]]
    return 1.0


def parse_csv(text: str) -> List[KernelRow]:
    """The kernel rows of a `--csv --page raw` report; the lines before its header (==PROF==,
    ==WARNING==, the application's output) and any malformed row are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    reader = csv.reader(lines[start:])
    header = next(reader)
    name_column = "Kernel Name" if "Kernel Name" in header else "Function Name"
    scales = [1.0] * len(header)
    rows: List[KernelRow] = []
    for cells in reader:
        if len(cells) != len(header):
            continue
        if _number(cells[0]) is None:  # the units row (its ID cell is empty)
            if not rows:
                scales = [_unit_scale(unit) for unit in cells]
            continue
        record = dict(zip(header, cells))
        row = KernelRow(record.get(name_column, "?"))
        for i, column in enumerate(header):
            value = _number(cells[i]) if column not in _INFO_COLUMNS else None
            if value is not None:
                row.values[column] = value * scales[i]
        rows.append(row)
    return rows


# ---- aggregation --------------------------------------------------------------------------------


def _weights(rows: Sequence[KernelRow]) -> List[float]:
    """Each kernel's duration; all 1 when no kernel has one."""
    durations = [max(0.0, row.values.get(DURATION, 0.0)) for row in rows]
    return durations if any(durations) else [1.0] * len(rows)


def _weighted_mean(pairs: Sequence[Tuple[float, float]]) -> Optional[float]:
    if not pairs:
        return None
    total = sum(w for w, _ in pairs)
    if total <= 0:
        return sum(v for _, v in pairs) / len(pairs)
    return sum(w * v for w, v in pairs) / total


def _fraction_of(row: KernelRow, metrics: Iterable[str]) -> Optional[float]:
    present = [row.values[m] for m in metrics if m in row.values]
    return min(1.0, max(0.0, max(present) / 100.0)) if present else None


def _fractions(rows: Sequence[KernelRow], keys: Iterable[str]) -> Dict[str, float]:
    weights = _weights(rows)
    out: Dict[str, float] = {}
    for key in keys:
        pairs: List[Tuple[float, float]] = []
        for weight, row in zip(weights, rows):
            fraction = _fraction_of(row, FRACTIONS[key])
            if fraction is not None:
                pairs.append((weight, fraction))
        mean = _weighted_mean(pairs)
        if mean is not None:
            out[key] = mean
    return out


def _sum(rows: Sequence[KernelRow], metrics: Iterable[str]) -> Optional[float]:
    values = [row.values[m] for row in rows for m in metrics if m in row.values]
    return sum(values) if values else None


def _stall_fractions(rows: Sequence[KernelRow]) -> Dict[str, float]:
    weights = _weights(rows)
    weighted: Dict[str, float] = {}
    for w, row in zip(weights, rows):
        for reason in STALL_REASONS:
            value = row.values.get(stall_metric(reason))
            if value is not None:
                weighted[reason] = weighted.get(reason, 0.0) + w * value
    total = sum(weighted.values())
    out: Dict[str, float] = {}
    for key, reasons in STALL_GROUPS.items():
        present = [weighted[r] for r in reasons if r in weighted]
        if present and total > 0:
            out[key] = sum(present) / total
    return out


def aggregate(rows: Sequence[KernelRow]) -> Dict[str, float]:
    """The signature's flat numbers over the profiled kernels; a key whose metrics are all missing
    is left out."""
    if not rows:
        return {}
    out: Dict[str, float] = {"ncu_kernel_count": float(len(rows))}
    busy_ns = _sum(rows, (DURATION,))
    if busy_ns is not None:
        out["ncu_busy_ms"] = busy_ns / 1e6
    out.update(_fractions(rows, FRACTIONS))
    dram = _sum(rows, (DRAM_READ, DRAM_WRITE))
    if dram is not None:
        out["dram_bytes"] = dram
    local = _sum(rows, (LOCAL_LD, LOCAL_ST))
    if local is not None:
        out["local_memory_bytes"] = local * SECTOR_BYTES
    out.update(_stall_fractions(rows))
    return out


def top_kernels(rows: Sequence[KernelRow], n: int = TOP_N) -> List[Dict[str, Any]]:
    """Launches grouped by kernel name, largest total time first, with their own weighted fractions."""
    groups: Dict[str, List[KernelRow]] = {}
    for row in rows:
        groups.setdefault(row.name, []).append(row)
    busy_ms = (_sum(rows, (DURATION,)) or 0.0) / 1e6
    listed: List[Dict[str, Any]] = []
    for name, launches in groups.items():
        ms = (_sum(launches, (DURATION,)) or 0.0) / 1e6
        entry: Dict[str, Any] = {"name": name, "ms": ms, "share": ms / busy_ms if busy_ms > 0 else 0.0,
                                 "count": len(launches)}
        entry.update(_fractions(launches, KERNEL_FRACTIONS))
        listed.append(entry)
    listed.sort(key=lambda e: e["ms"], reverse=True)
    return listed[:n]


def missing_metrics(requested: Iterable[str], rows: Sequence[KernelRow]) -> List[str]:
    """The requested metrics no profiled kernel has a number for."""
    return [m for m in requested if not any(m in row.values for row in rows)]


# ---- finding and running ncu --------------------------------------------------------------------


def _version_key(path: str) -> Tuple[Tuple[int, ...], str]:
    version = os.path.basename(os.path.dirname(path))
    digits = tuple(int(p) for p in version.split(".") if p.isdigit())
    return digits, version


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_ncu(env: Mapping[str, str] = os.environ) -> Optional[str]:
    """MBLAST_NCU if set; else ncu on PATH; else the newest /opt/nvidia/nsight-compute/*/ncu; else
    /usr/local/cuda/bin/ncu."""
    configured = env.get("MBLAST_NCU")
    if configured:
        return configured if _executable(configured) else None
    on_path = shutil.which("ncu", path=env.get("PATH"))
    if on_path:
        return on_path
    installed = [p for p in glob.glob("/opt/nvidia/nsight-compute/*/ncu") if _executable(p)]
    if installed:
        return max(installed, key=_version_key)
    cuda = "/usr/local/cuda/bin/ncu"
    return cuda if _executable(cuda) else None


def build_command(ncu: str, metrics: Sequence[str], launch_count: int, log_file: str, spec_path: str,
                  python: str = sys.executable) -> List[str]:
    return [ncu, "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(metrics),
            "--nvtx", "--nvtx-include", f"{RANGE}/", "--launch-count", str(launch_count),
            "--replay-mode", "kernel", "--cache-control", "all", "--clock-control", "none",
            "--log-file", log_file, python, "-m", "mblast_worker.ncu_target", spec_path]


def child_env(tmpdir: str, base: Mapping[str, str] = os.environ) -> Dict[str, str]:
    """The worker's environment, with a writable TMPDIR (ncu keeps its lock file there) and this
    package importable."""
    env = dict(base)
    env.pop("MBLAST_CACHE_FD", None)  # the problem cache is the worker's alone
    env["TMPDIR"] = tmpdir
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_parent] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


OUTPUT_TAIL_BYTES = 64 << 10
LOG_MAX_BYTES = 16 << 20


@dataclass
class NcuRun:
    returncode: Optional[int]  # None: killed at the time limit
    log: str  # ncu's --log-file: its messages and the CSV
    output: str  # the tail of ncu's and the target's stdout and stderr


def _read(path: str, limit: int, tail: bool) -> str:
    try:
        with open(path, "rb") as fh:
            if tail:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - limit))
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_once(command: Sequence[str], env: Mapping[str, str], timeout_s: float, tmpdir: str) -> NcuRun:
    """One ncu run in its own process group, killed whole at the time limit. Output goes to a file,
    so a chatty target can neither fill a pipe nor the worker's memory."""
    log_file = command[command.index("--log-file") + 1]
    if os.path.exists(log_file):
        os.remove(log_file)
    output_path = os.path.join(tmpdir, "output.txt")
    with open(output_path, "wb") as output:
        proc = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                env=dict(env), start_new_session=True)
        returncode: Optional[int] = None
        try:
            returncode = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _kill_group(proc)  # on a timeout, a WorkerTimeout, or leftovers of the target
    return NcuRun(returncode, _read(log_file, LOG_MAX_BYTES, tail=False),
                  _read(output_path, OUTPUT_TAIL_BYTES, tail=True))


_UNKNOWN_MARKERS = ("unknown", "not found", "failed to find", "invalid", "not available", "does not exist",
                    "not supported")


def unknown_metrics(text: str, metrics: Sequence[str]) -> List[str]:
    """Our metrics that ncu's messages call unknown, by full name or by base name (before the rollup)."""
    words: Set[str] = set()
    for line in text.lower().splitlines():
        if any(marker in line for marker in _UNKNOWN_MARKERS):
            words.update(word.rstrip(".") for word in re.findall(r"[a-z0-9_.]+", line))
    return [m for m in metrics if m.lower() in words or m.split(".")[0].lower() in words]


def failure_reason(run: NcuRun) -> str:
    """The line that says most about a run without kernel rows: the target's own error, else ncu's
    last error, else its last warning, else the last line of output."""
    lines = [line.strip() for line in (run.log + "\n" + run.output).splitlines() if line.strip()]
    for marker in ("ncu_target:", "==ERROR==", "==WARNING=="):
        picked = [line for line in lines if marker in line]
        if picked:
            return picked[-1][:400]
    if lines:
        return lines[-1][:400]
    if run.returncode:
        return f"ncu exited with status {run.returncode} without profiling a kernel"
    return f"ncu profiled no kernel inside the NVTX range {RANGE}"


# ---- the signature's keys -----------------------------------------------------------------------


@dataclass
class NcuOutcome:
    status: str  # ok | unavailable | failed
    reason: str = ""
    wall_s: float = 0.0
    rows: List[KernelRow] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)  # metrics ncu called unknown, left out of the retry


def signature_keys(outcome: NcuOutcome, launch_limit: int) -> Dict[str, Any]:
    """What the candidate's signature gets: "profiler" and "ncu": the run's account, its top kernels
    and, when it worked, "metrics": the numbers of aggregate(), apart from the PyTorch profiler's so
    that the driver can classify with and without them (docs/STATES.md)."""
    ok = outcome.status == "ok"
    missing = missing_metrics(METRICS, outcome.rows) if ok else list(outcome.dropped)
    report = {"status": outcome.status, "reason": outcome.reason, "wall_s": round(outcome.wall_s, 3),
              "launch_limit": launch_limit, "kernels_profiled": len(outcome.rows), "metrics_missing": missing,
              "kernels": top_kernels(outcome.rows) if ok else []}
    if ok:
        report["metrics"] = aggregate(outcome.rows)
    return {"profiler": "ncu", "ncu": report}


def profile(ncu: str, spec: TargetSpec, launch_count: int, timeout_s: float,
            env: Mapping[str, str] = os.environ) -> NcuOutcome:
    """Runs ncu over the target; if it fails naming some of our metrics as unknown, once more
    without them. `timeout_s` bounds both runs together."""
    t0 = guards.perf_counter_ns()

    def elapsed() -> float:
        return (guards.perf_counter_ns() - t0) / 1e9

    metrics = list(METRICS)
    dropped: List[str] = []
    with tempfile.TemporaryDirectory(prefix="mblast-ncu-") as tmpdir:
        spec_path = os.path.join(tmpdir, "spec.json")
        spec.write(spec_path)
        for attempt in range(2):
            remaining = timeout_s - elapsed()
            if remaining <= 0:
                return NcuOutcome("failed", f"timeout after {timeout_s:g} s", elapsed(), dropped=dropped)
            command = build_command(ncu, metrics, launch_count, os.path.join(tmpdir, "ncu.csv"), spec_path)
            try:
                run = run_once(command, child_env(tmpdir, env), remaining, tmpdir)
            except OSError as exc:
                return NcuOutcome("failed", f"ncu could not be started: {exc}", elapsed(), dropped=dropped)
            if run.returncode is None:
                return NcuOutcome("failed", f"timeout after {timeout_s:g} s", elapsed(), dropped=dropped)
            rows = parse_csv(run.log) or parse_csv(run.output)  # should this ncu print the report instead
            if rows:
                return NcuOutcome("ok", "", elapsed(), rows=rows, dropped=dropped)
            unknown = unknown_metrics(run.log + "\n" + run.output, metrics) if run.returncode != 0 else []
            if attempt == 0 and unknown and len(unknown) < len(metrics):
                dropped = unknown
                metrics = [m for m in metrics if m not in unknown]
                continue
            return NcuOutcome("failed", failure_reason(run), elapsed(), dropped=dropped)
    return NcuOutcome("failed", "ncu gave no kernel rows", elapsed(), dropped=dropped)


def candidate_keys(spec: TargetSpec, device: torch.device, launch_count: int, timeout_s: float) -> Dict[str, Any]:
    """The keys ncu adds to the candidate's signature, whatever happens: an unavailable or failed
    ncu says why in "ncu"."""
    if device.type != "cuda":
        return signature_keys(NcuOutcome("unavailable", NOT_CUDA), launch_count)
    ncu = find_ncu()
    if ncu is None:
        reason = NOT_FOUND
        configured = os.environ.get("MBLAST_NCU")
        if configured:
            reason += f" (MBLAST_NCU={configured} is not an executable file)"
        return signature_keys(NcuOutcome("unavailable", reason), launch_count)
    try:
        outcome = profile(ncu, spec, launch_count, timeout_s)
    except OSError as exc:  # no temporary directory, say
        outcome = NcuOutcome("failed", f"{type(exc).__name__}: {exc}")
    return signature_keys(outcome, launch_count)
