"""Intervals for a run's figures and for every comparison a report makes, from its episodes.

Each slice of episodes (a configuration, an agent, a context level, a whole run) becomes a
``stats.Arm`` whose cells are (task, agent, model, context), so resampling inside a task keeps
each configuration's samples apart, as pass@k's groups are. Two slices are compared over the tasks
both played, paired by task. Rates are shares of episodes; ``speedup`` is the geometric mean of
the best speedups of correct timed episodes, and two of them are compared by their ratio.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from . import stats
from .metrics import EpisodeView, by

DIMENSIONS = ("agent", "context", "model")


@dataclass(frozen=True)
class Spec:
    """Which figures get intervals: pass@k for these k, fast_p for these p > 0 (only when timed)."""

    pass_k: tuple[int, ...]
    fast_ps: tuple[float, ...]
    timed: bool
    resamples: int = stats.RESAMPLES
    seed: int = stats.SEED

    @classmethod
    def of(cls, episodes: Iterable[EpisodeView], pass_k: Iterable[int], fast_ps: Iterable[float]) -> Spec:
        timed = any(e.speedup() is not None for e in episodes)
        fast = tuple(float(p) for p in fast_ps if float(p) > 0) if timed else ()
        return cls(tuple(pass_k), fast, timed)

    def names(self) -> list[str]:
        return (
            ["correct"]
            + [f"pass@{k}" for k in self.pass_k]
            + [f"fast_{p:g}" for p in self.fast_ps]
            + (["speedup"] if self.timed else [])
        )


def _cell(e: EpisodeView) -> tuple[str, str, str]:
    return (e.agent, e.model, e.context)


def _channels(e: EpisodeView, spec: Spec) -> list[float]:
    ok = e.correct()
    speedup = e.speedup()
    fast = [float(ok and speedup is not None and speedup > p) for p in spec.fast_ps]
    log_speedup = math.log(speedup) if speedup is not None and speedup > 0 else math.nan
    return [float(ok), *fast, log_speedup]


def _arm(
    episodes: Sequence[EpisodeView],
    tasks: Sequence[str],
    values: Callable[[EpisodeView], list[float]],
    channels: int,
) -> stats.Arm:
    return stats.Arm.build(((e.task, _cell(e), values(e)) for e in episodes), tasks, channels)


def _tasks(episodes: Iterable[EpisodeView]) -> list[str]:
    return sorted({e.task for e in episodes})


def _unfinished(episodes: Iterable[EpisodeView]) -> int:
    return sum(1 for e in episodes if e.status != "finished")


def _exp(iv: stats.Interval) -> stats.Interval:
    def f(x: float | None) -> float | None:
        return None if x is None else math.exp(x)

    return stats.Interval(f(iv.estimate), f(iv.low), f(iv.high))


def _blank_when_untimed(
    episodes: Sequence[EpisodeView], values: dict[str, stats.Interval], spec: Spec
) -> None:
    """fast_p for p > 0 and speedup cannot be told for a slice none of whose episodes was timed."""
    if spec.timed and not any(e.speedup() is not None for e in episodes):
        for p in spec.fast_ps:
            values[f"fast_{p:g}"] = stats.Interval(None, None, None)


def _intervals(
    episodes: Sequence[EpisodeView], tasks: Sequence[str], spec: Spec
) -> dict[str, stats.Interval]:
    width = 2 + len(spec.fast_ps)
    arm = _arm(episodes, tasks, lambda e: _channels(e, spec), width)
    kw = {"resamples": spec.resamples, "seed": spec.seed}
    means = stats.intervals(arm, stats.Mean(), **kw)
    out = {"correct": means[0]}
    for k in spec.pass_k:
        out[f"pass@{k}"] = stats.intervals(arm.channel(0), stats.PassAt(k), **kw)[0]
    for i, p in enumerate(spec.fast_ps, start=1):
        out[f"fast_{p:g}"] = means[i]
    if spec.timed:
        out["speedup"] = _exp(means[-1])
    _blank_when_untimed(episodes, out, spec)
    return out


def summary(episodes: Sequence[EpisodeView], spec: Spec) -> dict[str, Any]:
    """Every figure of ``spec`` with its interval, over the slice's own tasks."""
    values = _intervals(episodes, _tasks(episodes), spec)
    return {
        "episodes": len(episodes),
        "unfinished": _unfinished(episodes),
        "tasks": len(_tasks(episodes)),
        **{name: iv.as_dict() for name, iv in values.items()},
    }


def versus(first: Sequence[EpisodeView], second: Sequence[EpisodeView], spec: Spec) -> dict[str, Any]:
    """first against second over the tasks both played: each side's figure and the difference.

    Rates differ by first - second; speedups by the ratio first / second. ``within_noise`` is True
    when the interval of the difference covers no difference (0, or a ratio of 1).
    """
    common = sorted(set(_tasks(first)) & set(_tasks(second)))
    a = [e for e in first if e.task in set(common)]
    b = [e for e in second if e.task in set(common)]
    out: dict[str, Any] = {
        "tasks": len(common),
        "tasks_first": len(_tasks(first)),
        "tasks_second": len(_tasks(second)),
        "episodes": [len(a), len(b)],
        "unfinished": [_unfinished(a), _unfinished(b)],
        "metrics": {},
    }
    if not common:
        return out
    width = 2 + len(spec.fast_ps)
    arm_a = _arm(a, common, lambda e: _channels(e, spec), width)
    arm_b = _arm(b, common, lambda e: _channels(e, spec), width)
    kw = {"resamples": spec.resamples, "seed": spec.seed}
    mean_a, mean_b, mean_d = stats.paired(arm_a, arm_b, stats.Mean(), **kw)
    left, right, diffs = {"correct": mean_a[0]}, {"correct": mean_b[0]}, {"correct": mean_d[0]}
    for k in spec.pass_k:
        pa, pb, pd = stats.paired(arm_a.channel(0), arm_b.channel(0), stats.PassAt(k), **kw)
        left[f"pass@{k}"], right[f"pass@{k}"], diffs[f"pass@{k}"] = pa[0], pb[0], pd[0]
    for i, p in enumerate(spec.fast_ps, start=1):
        name = f"fast_{p:g}"
        left[name], right[name], diffs[name] = mean_a[i], mean_b[i], mean_d[i]
    if spec.timed:
        left["speedup"], right["speedup"], diffs["speedup"] = (
            _exp(mean_a[-1]),
            _exp(mean_b[-1]),
            _exp(mean_d[-1]),
        )
    _blank_when_untimed(a, left, spec)
    _blank_when_untimed(b, right, spec)
    for name, diff in diffs.items():
        if left[name].estimate is None or right[name].estimate is None:
            diff = stats.Interval(None, None, None)
        null = 1.0 if name == "speedup" else 0.0
        out["metrics"][name] = {
            "first": left[name].as_dict(),
            "second": right[name].as_dict(),
            "difference": diff.as_dict(),
            "within_noise": diff.covers(null),
        }
    return out


def by_turn(episodes: Sequence[EpisodeView], max_turns: int, spec: Spec) -> list[dict[str, float | None]]:
    """Correct rate by turn t = 1..max_turns, each with its interval (the same draws for every turn)."""
    if not episodes:
        return []
    arm = _arm(
        episodes,
        _tasks(episodes),
        lambda e: [float(e.correct(t)) for t in range(1, max_turns + 1)],
        max_turns,
    )
    return [
        iv.as_dict() for iv in stats.intervals(arm, stats.Mean(), resamples=spec.resamples, seed=spec.seed)
    ]


def _levels(episodes: Sequence[EpisodeView], dim: str, order: Sequence[str]) -> list[str]:
    present = {getattr(e, dim) for e in episodes}
    return [x for x in order if x in present] + sorted(present - set(order))


def compute(
    episodes: Sequence[EpisodeView],
    *,
    pass_k: Iterable[int],
    fast_ps: Iterable[float],
    max_turns: int,
    order: dict[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Intervals for a run: per configuration, overall and per level; differences between levels.

    ``order`` gives each dimension's levels in the experiment's order (the first context level is
    the one the others are measured against).
    """
    played = [e for e in episodes if e.turns]
    spec = Spec.of(played, pass_k, fast_ps)
    order = order or {}
    levels = {d: _levels(played, d, order.get(d, ())) for d in DIMENSIONS}
    out: dict[str, Any] = {
        "method": {
            "bootstrap": "two-stage: tasks, then samples within each task; percentile interval",
            "level": stats.LEVEL,
            "resamples": spec.resamples,
            "seed": spec.seed,
        },
        "metrics": spec.names(),
        "overall": summary(played, spec),
        "configurations": [
            {"agent": a, "model": m, "context": c, **summary(eps, spec)}
            for (a, m, c), eps in by(played, _cell).items()
        ],
        "by": {
            d: {lv: summary([e for e in played if getattr(e, d) == lv], spec) for lv in levels[d]}
            for d in DIMENSIONS
        },
        "differences": {
            d: [
                {
                    "first": x,
                    "second": y,
                    **versus(
                        [e for e in played if getattr(e, d) == x],
                        [e for e in played if getattr(e, d) == y],
                        spec,
                    ),
                }
                for x, y in combinations(levels[d], 2)
            ]
            for d in DIMENSIONS
            if len(levels[d]) > 1
        },
        "context_ablation": _ablation(played, levels["context"], spec),
        "per_turn": {
            "agent": {a: by_turn(eps, max_turns, spec) for a, eps in by(played, lambda e: e.agent).items()},
            "agent_context": [
                {"agent": a, "context": c, "turns": by_turn(eps, max_turns, spec)}
                for (a, c), eps in by(played, lambda e: (e.agent, e.context)).items()
            ],
        },
    }
    return out


def _ablation(played: Sequence[EpisodeView], contexts: Sequence[str], spec: Spec) -> list[dict[str, Any]]:
    """Each context level against the first, for each agent and model."""
    if len(contexts) < 2:
        return []
    rows = []
    for (agent, model), eps in by(played, lambda e: (e.agent, e.model)).items():
        base = [e for e in eps if e.context == contexts[0]]
        for ctx in contexts[1:]:
            other = [e for e in eps if e.context == ctx]
            if base and other:
                rows.append(
                    {
                        "agent": agent,
                        "model": model,
                        "first": ctx,
                        "second": contexts[0],
                        **versus(other, base, spec),
                    }
                )
    return rows
