"""The bootstrap over tasks and samples, on synthetic outcomes whose true rates are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from warpgym.experiments import comparisons, stats
from warpgym.experiments.metrics import EpisodeView, TurnView, summarize


def _episodes(rates: dict[str, float], tasks: int, samples: int, seed: int, **kw: float) -> list[EpisodeView]:
    """One single-turn episode per (task, agent, sample); agent a is correct with probability rates[a]."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(tasks):
        for agent, p in rates.items():
            for s in range(samples):
                ok = bool(rng.random() < p)
                speedup = float(np.exp(rng.normal(kw.get(agent, 0.0), 0.3))) if ok and kw else None
                turn = TurnView(turn=1, compiled=True, correct=ok, speedup=speedup)
                out.append(EpisodeView(len(out), f"cat/t{t}", "cat", agent, "m", "none", s, turns=[turn]))
    return out


def _spec(timed: bool = False, resamples: int = 1000, seed: int = 0) -> comparisons.Spec:
    return comparisons.Spec((1, 2), (1.0,) if timed else (), timed, resamples, seed)


def test_a_large_true_difference_is_marked_different() -> None:
    eps = _episodes({"A": 0.8, "B": 0.3}, tasks=40, samples=3, seed=1)
    v = comparisons.versus([e for e in eps if e.agent == "A"], [e for e in eps if e.agent == "B"], _spec())
    m = v["metrics"]["correct"]
    assert v["tasks"] == 40
    assert m["within_noise"] is False
    assert 0 < m["difference"]["low"] < 0.5 < m["difference"]["high"]
    assert m["difference"]["estimate"] == pytest.approx(m["first"]["estimate"] - m["second"]["estimate"])
    assert v["metrics"]["pass@2"]["within_noise"] is False


def test_equal_true_rates_are_within_noise_in_most_seeds() -> None:
    verdicts = []
    for seed in range(20):
        eps = _episodes({"A": 0.5, "B": 0.5}, tasks=40, samples=3, seed=seed)
        v = comparisons.versus(
            [e for e in eps if e.agent == "A"], [e for e in eps if e.agent == "B"], _spec(resamples=500)
        )
        verdicts.append(v["metrics"]["correct"]["within_noise"])
    assert sum(verdicts) >= 17  # a 95% interval: about one seed in twenty may be marked different


def _coverage(flat: bool, datasets: int = 80) -> float:
    """Share of datasets whose interval covers the true mean rate, with strongly different tasks.

    ``flat`` lays every episode out as its own task: the naive bootstrap that treats episodes as
    independent, which must cover less often than the one over tasks and samples.
    """
    hits = 0
    true_mean = 0.5  # tasks' rates drawn from Beta(0.5, 0.5): mean 1/2, most tasks near 0 or 1
    for seed in range(datasets):
        rng = np.random.default_rng(1000 + seed)
        p = rng.beta(0.5, 0.5, size=15)
        rows = [(f"t{t}", "c", [float(rng.random() < p[t])]) for t in range(15) for _ in range(8)]
        if flat:
            rows = [(f"e{i}", "c", v) for i, (_, _, v) in enumerate(rows)]
        arm = stats.Arm.build(rows, sorted({r[0] for r in rows}), 1)
        iv = stats.intervals(arm, stats.Mean(), resamples=400, seed=seed)[0]
        hits += bool(iv.covers(true_mean))
    return hits / datasets


def test_intervals_cover_the_true_rate_and_a_flat_bootstrap_does_not() -> None:
    assert _coverage(flat=False) >= 0.88
    assert _coverage(flat=True) <= 0.75


def test_pass_at_k_intervals_cover_the_true_value_despite_the_redraw_bias() -> None:
    hits = 0
    true = 1 - (2 * 3) / (4 * 5)  # pass@2 = 1 - E[(1 - p)^2]; for p ~ Beta(2, 2) that mean is 6/20
    for seed in range(60):
        rng = np.random.default_rng(seed)
        p = rng.beta(2, 2, size=30)
        rows = [(f"t{t}", "c", [float(rng.random() < p[t])]) for t in range(30) for _ in range(4)]
        arm = stats.Arm.build(rows, [f"t{t}" for t in range(30)], 1)
        iv = stats.intervals(arm, stats.PassAt(2), resamples=400, seed=seed)[0]
        assert 0.0 <= iv.low <= iv.high <= 1.0
        hits += bool(iv.covers(true))
    assert hits / 60 >= 0.85


def test_a_difference_is_paired_by_task() -> None:
    # every task is solved by every sample of both arms, or by none: the tasks differ, the arms do not
    rows = [(f"t{t}", "c", [float(t % 2)]) for t in range(20) for _ in range(3)]
    a = stats.Arm.build(rows, [f"t{t}" for t in range(20)], 1)
    b = stats.Arm.build(rows, [f"t{t}" for t in range(20)], 1)
    (diff,) = stats.differences(a, b, stats.Mean(), resamples=500)
    assert (diff.estimate, diff.low, diff.high) == (0.0, 0.0, 0.0)  # drawn apart, it would be about +-0.3
    (alone,) = stats.intervals(a, stats.Mean(), resamples=500)
    assert alone.high - alone.low > 0.3


def test_the_same_seed_gives_the_same_intervals() -> None:
    eps = _episodes({"A": 0.6, "B": 0.4}, tasks=12, samples=4, seed=3)
    first = comparisons.summary(eps, _spec(seed=5))
    assert comparisons.summary(eps, _spec(seed=5)) == first
    assert comparisons.summary(eps, _spec(seed=6))["correct"] != first["correct"]


def test_point_estimates_are_the_metrics_figures() -> None:
    eps = _episodes({"A": 0.7, "B": 0.4}, tasks=9, samples=3, seed=4, A=0.3, B=-0.1)
    s = summarize(eps, pass_k=[1, 2], fast_ps=[0, 1])
    c = comparisons.summary(eps, _spec(timed=True, resamples=200))
    assert c["correct"]["estimate"] == pytest.approx(s["correct"])
    assert c["pass@1"]["estimate"] == pytest.approx(s["pass_at_k"]["1"])
    assert c["pass@2"]["estimate"] == pytest.approx(s["pass_at_k"]["2"])
    assert c["fast_1"]["estimate"] == pytest.approx(s["fast_p"]["1"])
    assert c["speedup"]["estimate"] == pytest.approx(s["speedup_geomean"])
    for name in ("correct", "pass@2", "fast_1", "speedup"):
        assert c[name]["low"] <= c[name]["estimate"] <= c[name]["high"]


def test_a_speedup_ratio_is_told_apart_from_noise() -> None:
    eps = _episodes({"A": 1.0, "B": 1.0}, tasks=30, samples=2, seed=5, A=math.log(2.0), B=0.0)
    v = comparisons.versus(
        [e for e in eps if e.agent == "A"], [e for e in eps if e.agent == "B"], _spec(True)
    )
    ratio = v["metrics"]["speedup"]
    assert ratio["within_noise"] is False and ratio["difference"]["low"] > 1.0
    assert v["metrics"]["correct"]["within_noise"] is True  # both always correct: no difference at all


def test_untimed_runs_have_no_speedup_or_fast_p_figures() -> None:
    eps = _episodes({"A": 0.5}, tasks=5, samples=2, seed=6)
    spec = comparisons.Spec.of(eps, [1], [0.0, 1.0, 2.0])
    assert spec.names() == ["correct", "pass@1"]


def test_comparisons_cover_only_the_tasks_both_sides_played() -> None:
    eps = _episodes({"A": 0.9, "B": 0.1}, tasks=10, samples=2, seed=7)
    a = [e for e in eps if e.agent == "A"]
    b = [e for e in eps if e.agent == "B" and e.task not in ("cat/t0", "cat/t1", "cat/t2")]
    v = comparisons.versus(a, b, _spec())
    assert (v["tasks"], v["tasks_first"], v["tasks_second"]) == (7, 10, 7)
    shared = [e for e in a if e.task not in ("cat/t0", "cat/t1", "cat/t2")]
    assert v["metrics"]["correct"]["first"]["estimate"] == pytest.approx(
        sum(e.correct() for e in shared) / len(shared)
    )
