"""A median with a distribution-free confidence interval: how a paired timing's speedup is reported.

Each round of a paired timing gives one ratio (a baseline's block time over the candidate's, timed in
the same window). The speedup is the median of those ratios, and its interval is the order-statistics
interval for a median: if the n ratios are independent draws from one distribution, the true median
lies below the j-th smallest with probability P(Binomial(n, 1/2) < j), so [r_(j), r_(n+1-j)] covers it
with probability 1 - 2 P(Binomial(n, 1/2) <= j - 1), whatever the distribution is. No bootstrap: the
coverage is exact for every n, and nothing is random. Below six rounds no pair of order statistics
reaches 95% (five give [min, max] at 93.75%); the interval is then [min, max] and says its coverage.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A median and the order-statistics interval around it."""

    median: float
    low: float
    high: float
    coverage: float
    """The interval's exact probability of covering the true median (at least CONFIDENCE from 6 values)."""
    n: int

    def widened(self, relative: float) -> Interval:
        """Each side grown, in quadrature, by ``relative`` times the median: an uncertainty the rounds of
        one window cannot sample (what differs between two evaluations of the same pair)."""
        if relative <= 0:
            return self
        extra = relative * self.median
        return Interval(self.median, self.median - math.hypot(self.median - self.low, extra),
                        self.median + math.hypot(self.high - self.median, extra), self.coverage, self.n)

    @property
    def half_width(self) -> float:
        """Half the interval's width relative to the median: 0.02 is "within 2%"."""
        return (self.high - self.low) / (2 * self.median) if self.median > 0 else math.inf


def order_statistic_rank(n: int, confidence: float = CONFIDENCE) -> tuple[int, float]:
    """The largest j (1-based) whose interval [x_(j), x_(n+1-j)] covers the median with at least
    ``confidence``, and its coverage; (1, coverage of [min, max]) when even that falls short."""
    if n < 1:
        raise ValueError("an interval needs at least one value")
    outcomes = 2 ** n  # exact integers: no underflow for any n
    below = 0  # outcomes with at most j - 1 values below the median, summed as j grows
    best = 1, 1.0 - 2 / outcomes
    for j in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, j - 1)
        coverage = 1.0 - 2 * below / outcomes
        if coverage < confidence:
            break
        best = j, coverage
    return best


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    ordered = sorted(values)
    if any(not math.isfinite(v) for v in ordered):
        raise ValueError("an interval of values that are not all finite")
    n = len(ordered)
    j, coverage = order_statistic_rank(n, confidence)
    return Interval(median=statistics.median(ordered), low=ordered[j - 1], high=ordered[n - j],
                    coverage=coverage, n=n)
