"""The benchmarks' interval of a median (`intervals`): the order statistics it picks and what
it says about a goal. Pure arithmetic; no timing."""

from __future__ import annotations

import random
import statistics

import pytest

from tests.benchmarks.intervals import median_interval, verdict


@pytest.mark.parametrize(("n", "k"), [(6, 1), (9, 2), (15, 4), (25, 8), (41, 14)])
def test_the_interval_is_the_sign_tests_order_statistics(n: int, k: int) -> None:
    """The published table of the sign test's 95 % interval (k = 1 at n = 6, 2 at 9, 4 at 15,
    8 at 25, 14 at 41): the k-th smallest and the k-th largest value."""
    values = [float(i) for i in range(1, n + 1)]
    random.Random(n).shuffle(values)
    assert median_interval(values) == (float(k), float(n + 1 - k))


def test_too_few_values_give_no_interval() -> None:
    """Five values: even their whole range holds the median only 94 % of the time."""
    assert median_interval([1.04, 0.98, 1.01, 1.05, 1.06]) is None
    assert verdict([1.04, 1.05, 1.06], 1.03) == "not resolved: too few values for a 95% interval"
    with pytest.raises(ValueError):
        median_interval([])


def test_the_interval_holds_the_true_median_about_as_often_as_promised() -> None:
    """Drawn from a skewed distribution whose median is known (exponential: ln 2), 41 values a
    time: at least 95 % of the intervals hold it, and not all of them (the interval is not the
    whole range)."""
    rng = random.Random(13)
    true_median = statistics.median(rng.expovariate(1.0) for _ in range(200_001))
    held = 0
    for _ in range(2000):
        interval = median_interval([rng.expovariate(1.0) for _ in range(41)])
        assert interval is not None
        low, high = interval
        held += low <= true_median <= high
    assert 0.95 <= held / 2000 < 0.99


def test_the_verdict_names_met_not_met_and_unresolved() -> None:
    tight_low = [1.00 + i / 1000 for i in range(41)]  # 1.000 to 1.040, median 1.020
    assert verdict(tight_low, 0.99).startswith("above 0.99 (not met")
    assert verdict(tight_low, 1.03) == "at most 1.03 (met: the whole 95% interval is at or below it)"
    assert verdict(tight_low, 1.02) == "not resolved: the 95% interval 1.013 to 1.027 holds 1.02"
