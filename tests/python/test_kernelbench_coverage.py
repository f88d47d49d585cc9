"""The KernelBench coverage helper's failure classification (benchmarks/kernelbench_coverage.py),
on the messages mblast and the shrinker actually print."""

import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

from kernelbench_coverage import (  # noqa: E402
    Outcome,
    Row,
    bundle_cause,
    classify,
    error_text,
    parse_range,
    problem_number,
    summary,
)

BUNDLE = "mblast: error: the problem cannot be bundled for a native backend: mblast_bundle: /kb/p.py: "


def test_error_text_takes_mblast_message_without_its_fix_line() -> None:
    stderr = "[warn] something\nmblast: error: no such problem file: x.py\n  fix: check the path\n"
    assert error_text(stderr) == "no such problem file: x.py"
    assert error_text("mblast: usage error: --x: bad\n  fix: run `mblast --help`\n") == "--x: bad"
    assert error_text("Traceback\nKeyError: 1\n") == "KeyError: 1"
    assert error_text("") == "no error message"


def test_bundle_causes() -> None:
    assert bundle_cause("the problem holds 163216 or more elements at its smallest reduced sizes (3 size "
                        "constants above 16, each divided down to 1): give a budget of at least that") == \
        "too large at its smallest reduced sizes (163216+ elements)"
    assert bundle_cause("no reduced size of the problem under 65536 elements runs: forward raised AttributeError: "
                        "module 'torch.nn.functional' has no attribute 'scaled_dot_product_attention'; a larger "
                        "budget (sizes divided by 8 hold 393216 or more) may") == \
        "needs a newer PyTorch (no scaled_dot_product_attention)"
    assert bundle_cause("no reduced size of the problem under 65536 elements runs: the shrunken problem: "
                        "Model(*get_init_inputs()) raised ValueError: num_channels must be divisible by num_groups; "
                        "a larger budget (sizes divided by 8 hold 458768 or more) may") == \
        "no reduced size fits: ValueError: num_channels must be divisible by num_groups"
    assert bundle_cause("output0 has dtype torch.complex64; native backends take float32, ...") == \
        "dtype torch.complex64 not supported by the bundles"
    assert bundle_cause("the problem does not run at any of its sizes under 65536 elements: the shrunken "
                        "problem: import raised ModuleNotFoundError: No module named 'einops'") == \
        "does not run: import raised ModuleNotFoundError: No module named 'einops'"
    assert bundle_cause("/kb/p.py: forward raised RuntimeError: boom") == "forward raised RuntimeError: boom"
    assert bundle_cause("something new\nsecond line") == "something new"


def test_timeout() -> None:
    bundle, baseline = classify("opencl", None, "", None, 120)
    assert not bundle.ok and bundle.cause == "timeout after 120 s"
    assert not baseline.ok and baseline.cause.startswith("not run")


def test_a_refused_bundle_fails_both_stages() -> None:
    stderr = BUNDLE + "forward raised RuntimeError: shape mismatch\n  fix: give --shrink a budget\n"
    bundle, baseline = classify("rvv", 2, stderr, None, 60)
    assert not bundle.ok and bundle.cause == "forward raised RuntimeError: shape mismatch"
    assert not baseline.ok and baseline.cause == "not run: no bundle"


def test_another_failure_after_bundling_is_the_baseline_stage() -> None:
    bundle, baseline = classify("opencl", 1, "mblast: error: no OpenCL platform found\n", None, 60)
    assert bundle.ok and not baseline.ok and baseline.cause == "no OpenCL platform found"


def test_a_run_without_its_summary() -> None:
    bundle, baseline = classify("opencl", 0, "", None, 60)
    assert bundle.ok and not baseline.ok and baseline.cause == "no JSON summary on stdout"


def test_headline_baseline_present() -> None:
    result = {"baselines": [{"name": "torch_cpu", "value": 0.02, "unit": "ms"}],
              "missing_baselines": ["naive_opencl: no naive kernel /x/p.naive.cl (optional; ...)"]}
    bundle, baseline = classify("opencl", 0, "", result, 60)
    assert bundle.ok and baseline.ok and "torch_cpu 0.02 ms" in baseline.detail


def test_rvv_without_a_twin() -> None:
    result = {"baselines": [], "missing_baselines": ["best_c: no scalar C twin /x/p.c (write ...)"]}
    bundle, baseline = classify("rvv", 0, "", result, 60)
    assert bundle.ok and not baseline.ok and baseline.cause == "no scalar C twin"


def test_a_failing_twin_is_named_before_absence() -> None:
    result = {"baselines": [], "missing_baselines": [
        "scalar_c_O2: /x/p.c failed: output 0 has shape [4], the reference [4, 1]",
        "autovec_c_O3: /x/p.c failed: output 0 has shape [4], the reference [4, 1]"]}
    _, baseline = classify("rvv", 0, "", result, 60)
    assert baseline.cause == "scalar_c_O2 failed: output 0 has shape [4], the reference [4, 1]"


def test_summary_counts_and_causes() -> None:
    rows = [Row(1, "a", Outcome(True), {"opencl": Outcome(True), "rvv": Outcome(False, "no scalar C twin")}),
            Row(2, "b", Outcome(True), {"opencl": Outcome(True), "rvv": Outcome(False, "no scalar C twin")}),
            Row(3, "c", Outcome(False, "needs a newer PyTorch (no x)"),
                {"opencl": Outcome(False, "not run: no bundle"), "rvv": Outcome(False, "not run: no bundle")})]
    text = summary(rows)
    assert text.startswith("Summary: bundles 2/3; OpenCL (PoCL) baseline 2/3; RVV (QEMU) baseline 0/3.")
    assert "- 2 x rvv: no scalar C twin" in text and "- 1 x bundle: needs a newer PyTorch (no x)" in text
    assert "not run" not in text


def test_problem_numbers_and_ranges() -> None:
    assert problem_number(Path("19_ReLU.py")) == 19 and problem_number(Path("x.py")) == 0
    assert parse_range("1-3,7") == [1, 2, 3, 7]
