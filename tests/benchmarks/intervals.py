"""How precisely a median of pairwise ratios is known: the distribution-free confidence interval
of a median, from the order statistics of the sample (the sign test's interval). It assumes
nothing about the shape of the ratios' spread, which on a machine whose speed drifts is not
normal; only that the pairs are independent. Used by the benchmarks to say whether a goal such
as "at most 1.03" is met, not met, or beyond what the run can resolve."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """The narrowest interval between order statistics `[x(k), x(n+1-k)]` that holds the true
    median with at least `confidence` (k is the largest with P(Binomial(n, 1/2) < k) at most
    (1 - confidence) / 2). None with too few values for that confidence (fewer than 6 at 95 %:
    even the whole range holds the median less often)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2
    below = 0  # P(Binomial(n, 1/2) < k), for the k reached so far
    k = 0
    while k < n // 2:
        next_below = below + comb(n, k) / 2**n
        if next_below > tail:
            break
        below, k = next_below, k + 1
    if k == 0:
        return None
    return ordered[k - 1], ordered[n - k]


def verdict(values: Sequence[float], goal: float, confidence: float = 0.95) -> str:
    """Whether the median of `values` is at most `goal`, as far as the sample can tell."""
    interval = median_interval(values, confidence)
    if interval is None:
        return f"not resolved: too few values for a {confidence:.0%} interval"
    low, high = interval
    if high <= goal:
        return f"at most {goal} (met: the whole {confidence:.0%} interval is at or below it)"
    if low > goal:
        return f"above {goal} (not met: the whole {confidence:.0%} interval is above it)"
    return f"not resolved: the {confidence:.0%} interval {low:.3f} to {high:.3f} holds {goal}"
