"""How many timed rounds the judge runs: all of them while a median is uncertain, fewer once every
contender's median has settled, and the candidate's checked outputs always from the last rounds."""

import itertools
import math
import random
from typing import Callable, Iterator, List, Tuple

import pytest

from mblast_worker.timing import Measurement, median_uncertainty
from mblast_worker.timing_phase import MIN_RUNS, Contender, timed_rounds


def test_the_median_s_uncertainty_is_the_width_of_its_order_statistics() -> None:
    assert median_uncertainty([]) == math.inf and median_uncertainty([1.0, 1.0]) == math.inf
    assert median_uncertainty([2.0] * 30) == 0.0
    # n = 100: the 95 % interval runs from the 41st to the 60th value (0-based 40 and 60).
    values = [float(v) for v in range(1, 101)]
    assert median_uncertainty(values) == pytest.approx((61.0 - 41.0) / (2 * 50.5))
    assert median_uncertainty([0.0] * 10) == math.inf


def _contender(name: str) -> Contender:
    return Contender(name, lambda inputs: lambda: None, lambda: None, lambda: None, keep_last=False)


def _rounds(times: Callable[[str], Iterator[float]], runs: int, n_sets: int,
            checked_sets: int) -> Tuple[int, List[Contender], List[Tuple[int, bool]]]:
    """timed_rounds over fake contenders whose times come from times(name); returns the rounds
    run, the contenders, and (input set, flagged last) of each of the candidate's calls."""
    contenders = [_contender("ref"), _contender("cand")]
    streams = {c.name: times(c.name) for c in contenders}
    last_round = [False]
    calls: List[Tuple[int, bool]] = []

    def measure(c: Contender, k: int) -> Measurement:
        if c.name == "cand":
            calls.append((k, last_round[0]))
        return Measurement(next(streams[c.name]), 0.0, None)

    done = timed_rounds(contenders, measure, runs, n_sets, checked_sets, last_round)
    return done, contenders, calls


def test_quiet_timings_stop_early_and_the_last_rounds_are_still_checked() -> None:
    rng = random.Random(1)
    done, contenders, calls = _rounds(lambda name: iter(lambda: 1.0 + rng.uniform(0, 1e-4), None), 100, 3, 3)
    first_turn = MIN_RUNS + (-MIN_RUNS) % 3  # the first whole turn of the input sets after MIN_RUNS
    assert done == first_turn + 3 < 100
    assert all(len(c.ms) == done and len(c.hidden_ms) == done for c in contenders)
    flagged = [k for k, last in calls if last]
    assert calls[-3:] == [(k, True) for k in flagged] and sorted(flagged) == [0, 1, 2]
    assert not any(last for _, last in calls[:-3])


def test_noisy_timings_run_every_round() -> None:
    rng = random.Random(2)
    done, contenders, calls = _rounds(lambda name: iter(lambda: rng.choice([1.0, 1.5]), None), 60, 3, 1)
    assert done == 60 and len(contenders[0].ms) == 60
    assert [last for _, last in calls] == [False] * 59 + [True]


def test_one_noisy_contender_keeps_timing_going() -> None:
    rng = random.Random(3)

    def times(name: str) -> Iterator[float]:
        if name == "ref":
            return itertools.repeat(2.0)
        return iter(lambda: rng.uniform(1.0, 1.2), None)

    done, _, _ = _rounds(times, 80, 1, 1)
    assert done == 80


def test_a_run_count_below_the_minimum_is_run_whole() -> None:
    done, contenders, calls = _rounds(lambda name: itertools.repeat(1.0), 5, 3, 3)
    assert done == 5 and len(contenders[1].ms) == 5
    assert [last for _, last in calls] == [False, False, True, True, True]

