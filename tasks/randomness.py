"""Statistical tests for the outputs of random-number kernels, which no reference can match element by
element: counts and moments against their expectation, correlation between elements, the distance of the
empirical distribution from the target one, and how often values repeat.

Every bound is set so that a correct generator fails a test with a probability of about 2e-9 or less
(stated at each test); a task runs a few hundred of them per evaluation at most.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

Z = 6.0
"""Count and moment bounds are this many standard deviations wide: a correct kernel fails one in ~5e8."""
KS_FALSE_FAILURE = 2e-9
"""The distribution-distance test's false-failure probability (its bound comes from the DKW inequality)."""
LAG_ELEMENTS = 1 << 22
"""Correlation, distribution and repetition tests look at the first 4M elements: a defect in the generator
shows there too."""
GENERATOR_STEP = 2.0**-21
"""The coarsest probability step allowed to the generator before its output is rounded: a 24-bit uniform
(tl.rand's resolution in [0.5, 1), and any honest one) is 8 times finer; the slack covers float32
arithmetic on it. A generator of 20 random bits or fewer per element shows as repeated values."""
CDF_SLACK = 1e-4
"""How far the CDF of a correct generator's output may sit from the target's for reasons other than
chance: its 24-bit steps (6e-8), float32 arithmetic (below 1e-6 on every case) and tail clipping
(tl.randn draws no |z| beyond 5.7: 1.3e-8). Far below the distance test's bound (0.018 at 32k elements)."""


def count_problem(what: str, observed: float, expected: float, variance: float,
                  slack: float = 2.0) -> str | None:
    sd = math.sqrt(max(variance, 0.0))
    off = abs(observed - expected)
    if off > Z * sd + slack:
        sigmas = f"{off / sd:.1f} standard deviations" if sd > 0 else "it should be exact"
        return f"{what} is {observed:.6g}; expected {expected:.6g} +- {sd:.3g} ({sigmas} off)"
    return None


def lag_problem(z: torch.Tensor, row: int) -> str | None:
    """``z`` is standardized (mean 0, variance 1 per element if the generator is right)."""
    z = z.flatten()[:LAG_ELEMENTS].to(torch.float64)
    n = z.numel()
    lags = {1 << i for i in range(31) if (1 << i) <= n // 4}
    if 0 < row <= n // 2:
        lags.add(row)
    for lag in sorted(lags):
        m = n - lag
        r = float((z[:-lag] * z[lag:]).mean())
        if abs(r) > Z / math.sqrt(m):
            return (f"elements {lag} apart are correlated (mean product of standardized values {r:.3g}, "
                    f"expected 0 +- {1 / math.sqrt(m):.2g}): each element needs its own random number "
                    "(offsets unique over the whole tensor)")
    return None


def bernoulli_problem(what: str, hits: torch.Tensor, q: float, row: int,
                      valid: torch.Tensor | None = None) -> str | None:
    """``hits`` (bool) should be independent Bernoulli(q) draws; only ``valid`` ones are counted."""
    hits = hits.flatten()
    counted = hits if valid is None else hits[valid.flatten()]
    n = counted.numel()
    problem = count_problem(f"the number of {what}", float(counted.sum()), n * q, n * q * (1 - q))
    if problem or q <= 0 or q >= 1:
        return problem
    sd = math.sqrt(q * (1 - q))
    z = torch.where(hits, (1 - q) / sd, -q / sd)
    if valid is not None:
        z = torch.where(valid.flatten(), z, 0.0)  # neutral: keeps the lag test's bound conservative
    return lag_problem(z, row)


def half_cell(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An upper bound on half the spacing of ``dtype`` at each of ``values`` (float64): every real number
    within it of a value rounds to that value or a neighbour, never past it."""
    info = torch.finfo(dtype)
    return values.abs() * (info.eps / 2) + info.tiny * info.eps


CDF = Callable[[torch.Tensor], torch.Tensor]


def distribution_problem(what: str, out: torch.Tensor, cdf: CDF) -> str | None:
    """A Kolmogorov-Smirnov test of ``out`` (a floating tensor) against the continuous ``cdf`` (float64 in,
    float64 out), allowing for the rounding to ``out``'s dtype.

    A value v of the output stands for every real number that rounds to it, so the empirical CDF at v is
    compared with cdf(v + half a spacing) from above and the count below v with cdf(v - half a spacing)
    from below. By the Dvoretzky-Kiefer-Wolfowitz inequality (Massart's constant) the empirical CDF of n
    draws from any distribution is farther than t from it with probability at most 2 exp(-2 n t^2); t is
    set for ``KS_FALSE_FAILURE``. A generator with a few random bits per element (16 values) shows here.
    """
    out = out.flatten()[:LAG_ELEMENTS]
    v, counts = torch.unique(out.to(torch.float64), sorted=True, return_counts=True)
    n = int(counts.sum())
    at_or_below = torch.cumsum(counts, 0).to(torch.float64) / n
    below = at_or_below - counts.to(torch.float64) / n
    half = half_cell(v, out.dtype)
    over = at_or_below - cdf(v + half)
    under = cdf(v - half) - below
    bound = math.sqrt(math.log(2 / KS_FALSE_FAILURE) / (2 * n)) + CDF_SLACK
    worst = torch.maximum(over, under)
    i = int(worst.argmax())
    if float(worst[i]) <= bound:
        return None
    if float(over[i]) >= float(under[i]):
        seen, want, how = float(at_or_below[i]), float(at_or_below[i] - over[i]), "<="
    else:
        seen, want, how = float(below[i]), float(below[i] + under[i]), "<"
    return (f"{what} do not follow the target distribution: a fraction {seen:.4f} of them is {how} "
            f"{float(v[i]):.6g} where {want:.4f} should be (Kolmogorov-Smirnov distance "
            f"{float(worst[i]):.4f}, bound {bound:.4f} for {n} values)")


def repetition_problem(what: str, out: torch.Tensor, largest_cell: float) -> str | None:
    """Values repeat no more often than the output dtype's rounding makes them.

    ``largest_cell`` bounds the target probability of any one value of the output (the mass of its
    rounding cell); the generator may add ``GENERATOR_STEP``. With M their sum, the number of equal pairs
    among n values has mean sum_v C(n,2) p_v^2 <= C(n,2) M and variance <= C(n,2) M + n^3 M^2, and the
    bound sits ``Z`` standard deviations above that mean. A correct generator's mean is at most the bound's
    (for floating outputs well below: the callers bound each cell by twice its width), so it fails with a
    probability below about 2e-9. A generator of 16 or 20 random bits per element repeats values far more
    often.
    """
    flat = out.flatten()[:LAG_ELEMENTS]
    n = flat.numel()
    _, counts = torch.unique(flat, return_counts=True)
    c = counts.to(torch.float64)
    pairs = float((c * (c - 1) / 2).sum())
    m = min(1.0, largest_cell + GENERATOR_STEP)
    n_pairs = n * (n - 1) / 2
    most = n_pairs * m + Z * math.sqrt(n_pairs * m + n**3 * m * m) + 2
    if pairs > most:
        return (f"{what} repeat too often: {counts.numel()} distinct values among {n}, {pairs:.0f} equal "
                f"pairs where at most {most:.0f} can come from rounding to {out.dtype}: each element needs a "
                "full-resolution random number (a 24-bit uniform or finer), not a few random bits")
    return None
