"""Bootstrap intervals over tasks and samples, for every figure a report compares.

Episodes are not independent: the samples of one task share its difficulty, so resampling
episodes one by one understates the noise. One replicate here draws the tasks with replacement,
then, inside each drawn copy of a task and each of its cells (a configuration's samples of that
task), as many of the cell's samples as it holds, with replacement: a two-stage cluster bootstrap.
Drawing samples again inside a task keeps the noise of a run with few tasks and many samples in
view; with many tasks it makes the interval slightly wider than a task-only bootstrap (it errs on
the cautious side). Intervals are the 2.5th and 97.5th percentiles of the replicates (a percentile
bootstrap). pass@k of a redrawn count is biased low, so each cell's redrawn score is shifted by
that bias, worked out exactly from the binomial, and kept within [0, 1]. A difference between two
arms draws the same tasks for both (paired by task) and their samples independently; it is
*within noise* when its interval covers zero. Every figure draws from a generator seeded afresh,
so the same store gives the same intervals, whatever else the report computes.

An arm holds one row per episode and one column per channel, a per-episode value (correct or not,
correct by turn t, log speedup, ...); NaN marks an outcome that does not count for its channel
(the speedup of an untimed episode).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 1000
SEED = 0
MIN_DEFINED = 0.9
"""An interval needs the statistic defined in at least this share of the replicates."""
CHUNK_ELEMENTS = 4_000_000
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: one row of channel values per episode, grouped in cells.

    A cell is one configuration's samples of one task; ``values`` holds the episodes cell after
    cell, NaN where an outcome does not count for a channel.
    """

    tasks: tuple[str, ...]
    values: np.ndarray
    cell_task: np.ndarray
    cell_size: np.ndarray

    @classmethod
    def build(
        cls, rows: Iterable[tuple[str, Hashable, Sequence[float]]], tasks: Sequence[str], channels: int
    ) -> Arm:
        """From (task, cell, one value per channel) rows; rows of tasks not in ``tasks`` are dropped."""
        index = {t: i for i, t in enumerate(tasks)}
        grouped: dict[tuple[int, Hashable], list[Sequence[float]]] = {}
        for task, cell, values in rows:
            if task not in index:
                continue
            if len(values) != channels:
                raise ValueError(f"expected {channels} values per outcome, got {len(values)}")
            grouped.setdefault((index[task], cell), []).append(values)
        flat = [v for vs in grouped.values() for v in vs]
        return cls(
            tuple(tasks),
            np.asarray(flat, dtype=float).reshape(len(flat), channels),
            np.asarray([t for t, _ in grouped], dtype=np.int64),
            np.asarray([len(vs) for vs in grouped.values()], dtype=np.int64),
        )

    @property
    def channels(self) -> int:
        return self.values.shape[1]

    @property
    def episodes(self) -> int:
        return self.values.shape[0]

    def channel(self, i: int) -> Arm:
        return Arm(self.tasks, self.values[:, i : i + 1], self.cell_task, self.cell_size)

    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.cell_size)[:-1]]).astype(np.int64)

    def by_task(self) -> list[np.ndarray]:
        """The cells of each task."""
        return [np.flatnonzero(self.cell_task == t) for t in range(len(self.tasks))]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile-bootstrap interval (None where it cannot be told)."""

    estimate: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high}

    def covers(self, x: float) -> bool | None:
        """Whether ``x`` lies in the interval (to rounding: a bound of -1e-17 covers 0)."""
        if self.low is None or self.high is None:
            return None
        return self.low - TOLERANCE <= x <= self.high + TOLERANCE


# --------------------------------------------------------------------------- statistics
class Mean:
    """The mean over every outcome that counts (pooled over tasks and cells), per channel."""

    def point(self, arm: Arm) -> np.ndarray:
        valid = ~np.isnan(arm.values)
        n = valid.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, np.where(valid, arm.values, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)

    def width(self, arm: Arm) -> int:
        """Elements held per replicate (episode weights, and their products with the channels)."""
        return arm.episodes * max(arm.channels, 2)

    def replicate(self, arm: Arm, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        weights = _episode_weights(arm, drawn, rng)
        valid = ~np.isnan(arm.values)
        total = weights @ np.where(valid, arm.values, 0.0)
        n = weights @ valid.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.maximum(n, 1), np.nan)


class PassAt:
    """Unbiased pass@k of each cell (its samples of one task), averaged over cells with >= k samples.

    Reads channel 0 as correct (1) or not (0); the other channels are ignored.
    """

    def __init__(self, k: int) -> None:
        self.k = k

    def _cells(self, arm: Arm) -> tuple[np.ndarray, np.ndarray]:
        correct = arm.values[:, 0]
        if np.any((correct != 0) & (correct != 1)):
            raise ValueError("pass@k needs outcomes that are 0 or 1")
        sums = np.add.reduceat(correct, arm.offsets()) if arm.episodes else np.zeros(0)
        return arm.cell_size, sums.round().astype(np.int64)

    def _score(self, scores: np.ndarray, n: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
        ok = n >= self.k
        used = ok.sum(axis=axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = np.where(ok, scores, 0.0).sum(axis=axis)
            return np.where(used > 0, total / np.maximum(used, 1), np.nan)

    def width(self, arm: Arm) -> int:
        """Elements held per replicate: one redrawn count per task slot and cell."""
        return len(arm.tasks) * max((len(x) for x in arm.by_task()), default=1)

    def point(self, arm: Arm) -> np.ndarray:
        n, c = self._cells(arm)
        table, _ = _pass_tables(int(n.max(initial=0)), self.k)
        return np.atleast_1d(self._score(table[n, c], n, (0,)))

    def replicate(self, arm: Arm, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each drawn cell's correct count drawn again from its samples; its score corrected for the
        bias of scoring a with-replacement draw (pass@k of a redrawn count is lower on average)."""
        n, c = self._cells(arm)
        table, expected = _pass_tables(int(n.max(initial=0)), self.k)
        cells = arm.by_task()
        width = max((len(x) for x in cells), default=0)
        sizes = np.zeros((len(cells), max(width, 1)), dtype=np.int64)
        rates = np.zeros(sizes.shape)
        shift = np.zeros(sizes.shape)
        for t, idx in enumerate(cells):
            sizes[t, : len(idx)] = n[idx]
            rates[t, : len(idx)] = c[idx] / np.maximum(n[idx], 1)
            shift[t, : len(idx)] = np.nan_to_num(table[n[idx], c[idx]] - expected[n[idx], c[idx]])
        size = sizes[drawn]
        redrawn = rng.binomial(size, rates[drawn])
        scores = np.clip(table[size, redrawn] + shift[drawn], 0.0, 1.0)
        return self._score(scores, size, (1, 2))[:, None]


Statistic = Mean | PassAt


def _pass_tables(max_n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """pass@k for every n <= max_n and c <= n, and its mean when c is drawn again from Bin(n, c/n).

    NaN where n < k.
    """
    from .metrics import pass_at_k

    table = np.full((max_n + 1, max_n + 1), np.nan)
    expected = np.full(table.shape, np.nan)
    for n in range(k, max_n + 1):
        for c in range(n + 1):
            table[n, c] = pass_at_k(n, c, k)
        for c in range(n + 1):
            p = c / n
            weights = [math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n + 1)]
            expected[n, c] = float(np.dot(weights, table[n, : n + 1]))
    return table, expected


def _episode_weights(arm: Arm, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """How often each episode is drawn in each replicate: (replicates, episodes).

    For every drawn copy of a task, each of its cells draws as many of its own episodes as it holds.
    """
    offsets, sizes = arm.offsets(), arm.cell_size
    cells = arm.by_task()
    width = max((int(sizes[idx].sum()) for idx in cells), default=0)
    start = np.zeros((len(cells), max(width, 1)), dtype=np.int64)
    span = np.zeros(start.shape, dtype=np.int64)
    for t, idx in enumerate(cells):
        n = sizes[idx]
        start[t, : n.sum()] = np.repeat(offsets[idx], n)
        span[t, : n.sum()] = np.repeat(n, n)
    b, total = drawn.shape[0], arm.episodes * drawn.shape[0]
    span_b = span[drawn]
    picks = start[drawn] + (rng.random(span_b.shape) * span_b).astype(np.int64)
    flat = picks + (np.arange(b) * arm.episodes)[:, None, None]
    flat = np.where(span_b > 0, flat, total)  # padding lands in one extra bin, dropped below
    return np.bincount(flat.ravel(), minlength=total + 1)[:total].reshape(b, arm.episodes).astype(float)


# --------------------------------------------------------------------------- resampling
def replicates(
    arms: Sequence[Arm], statistic: Statistic, *, resamples: int = RESAMPLES, seed: int = SEED
) -> list[np.ndarray]:
    """(resamples, channels) replicates of the statistic for each arm, the tasks drawn alike for all."""
    if not arms:
        return []
    tasks = arms[0].tasks
    if any(a.tasks != tasks for a in arms):
        raise ValueError("the arms of one bootstrap must be laid out over the same tasks")
    rng = np.random.default_rng(seed)
    n_tasks = len(tasks)
    width = max(statistic.width(a) for a in arms)
    chunk = max(1, min(resamples, CHUNK_ELEMENTS // max(width, 1)))
    out: list[list[np.ndarray]] = [[] for _ in arms]
    done = 0
    while done < resamples:
        b = min(chunk, resamples - done)
        drawn = rng.integers(0, max(n_tasks, 1), size=(b, n_tasks))
        for i, arm in enumerate(arms):
            out[i].append(statistic.replicate(arm, drawn, rng))
        done += b
    return [np.concatenate(parts) for parts in out]


def _percentiles(reps: np.ndarray, level: float) -> tuple[list[float | None], list[float | None]]:
    lows, highs = [], []
    tail = 100 * (1 - level) / 2
    for column in reps.T:
        defined = column[~np.isnan(column)]
        if len(defined) < MIN_DEFINED * len(column):
            lows.append(None)
            highs.append(None)
        else:
            lo, hi = np.percentile(defined, [tail, 100 - tail])
            lows.append(float(lo))
            highs.append(float(hi))
    return lows, highs


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def intervals(
    arm: Arm, statistic: Statistic, *, level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> list[Interval]:
    """One interval per channel of the arm."""
    est = statistic.point(arm)
    (reps,) = replicates([arm], statistic, resamples=resamples, seed=seed)
    lows, highs = _percentiles(reps, level)
    return [Interval(_finite(e), lo, hi) for e, lo, hi in zip(est, lows, highs, strict=True)]


def paired(
    first: Arm,
    second: Arm,
    statistic: Statistic,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[list[Interval], list[Interval], list[Interval]]:
    """Each arm's intervals and those of first - second, per channel, from one set of draws paired
    by task: both arms must be laid out over the same tasks."""
    ests = [statistic.point(first), statistic.point(second)]
    a, b = replicates([first, second], statistic, resamples=resamples, seed=seed)
    out = []
    for est, reps in ((ests[0], a), (ests[1], b), (ests[0] - ests[1], a - b)):
        lows, highs = _percentiles(reps, level)
        out.append([Interval(_finite(e), lo, hi) for e, lo, hi in zip(est, lows, highs, strict=True)])
    return out[0], out[1], out[2]


def differences(
    first: Arm,
    second: Arm,
    statistic: Statistic,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> list[Interval]:
    """first - second per channel, paired by task: both arms must cover the same tasks."""
    return paired(first, second, statistic, level=level, resamples=resamples, seed=seed)[2]
