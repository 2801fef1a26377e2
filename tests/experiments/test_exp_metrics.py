"""pass@k, fast_p and the per-turn state, against values worked out by hand."""

from __future__ import annotations

import math

import pytest
from warpgym.experiments.metrics import (
    EpisodeView,
    TurnView,
    fast_p,
    geomean,
    mean_pass_at_k,
    pass_at_k,
    per_turn,
    summarize,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),  # pass@1 is c / n
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (4, 0, 2, 0.0),  # nothing correct
        (3, 2, 2, 1.0),  # n - c < k: every k-subset holds a correct one
        (1, 1, 1, 1.0),
        (20, 1, 10, 1 - math.comb(19, 10) / math.comb(20, 10)),
    ],
)
def test_pass_at_k_matches_the_binomial_formula(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_rejects_impossible_arguments() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_mean_pass_at_k_averages_problems_and_skips_those_with_too_few_samples() -> None:
    # problem A: 4 samples, 1 correct; B: 4 samples, 4 correct; C: 1 sample (left out of pass@2)
    groups = [(4, 1), (4, 4), (1, 0)]
    assert mean_pass_at_k(groups, 1) == pytest.approx((0.25 + 1.0 + 0.0) / 3)
    assert mean_pass_at_k(groups, 2) == pytest.approx(((1 - 3 / 6) + 1.0) / 2)
    assert mean_pass_at_k([(1, 1)], 2) is None


def test_fast_p_divides_by_all_episodes_and_needs_strictly_more_than_p() -> None:
    outcomes = [(True, 2.0), (True, 0.8), (False, 3.0), (True, None), (True, 1.5)]
    assert fast_p(outcomes, 0) == pytest.approx(4 / 5)  # fast_0 = correct rate
    assert fast_p(outcomes, 1) == pytest.approx(2 / 5)  # 2.0 and 1.5; the wrong 3.0 does not count
    assert fast_p(outcomes, 1.5) == pytest.approx(1 / 5)  # 1.5 is not > 1.5
    assert fast_p(outcomes, 2) == pytest.approx(0 / 5)


def test_fast_p_is_undefined_without_any_timing_but_fast_0_is_not() -> None:
    outcomes = [(True, None), (False, None)]
    assert fast_p(outcomes, 1.0) is None
    assert fast_p(outcomes, 0.0) == pytest.approx(0.5)
    assert fast_p([], 0.0) is None


def test_geomean_ignores_missing_and_nonpositive() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([None, 4.0, float("nan")]) == pytest.approx(4.0)  # type: ignore[list-item]
    assert geomean([]) is None


def _ep(
    i: int,
    turns: list[tuple[bool, bool, float | None]],
    agent: str = "fix-retry",
    task: str = "math/add",
    sample: int = 0,
    tokens: int = 100,
) -> EpisodeView:
    return EpisodeView(
        id=i,
        task=task,
        category=task.split("/")[0],
        agent=agent,
        model="m",
        context="none",
        sample=sample,
        turns=[
            TurnView(
                turn=t + 1,
                compiled=c,
                correct=ok,
                speedup=s,
                input_tokens=tokens,
                output_tokens=tokens,
                cost_usd=0.01,
            )
            for t, (c, ok, s) in enumerate(turns)
        ],
    )


def test_best_turn_is_the_fastest_correct_and_state_by_turn_is_cumulative() -> None:
    e = _ep(1, [(False, False, None), (True, True, 1.2), (True, False, None), (True, True, 3.0)])
    assert e.best().turn == 4
    assert e.best(3).turn == 2  # by turn 3 the best is still turn 2
    assert e.correct(1) is False and e.correct(2) is True and e.correct(3) is True
    assert e.speedup(3) == pytest.approx(1.2)
    untimed = _ep(2, [(True, True, None), (True, True, None)])
    assert untimed.best().turn == 1  # no timing: the earliest correct
    wrong = _ep(3, [(True, False, None), (False, False, None)])
    assert wrong.best().turn == 2 and not wrong.correct()


def test_summary_and_per_turn_on_a_small_grid() -> None:
    eps = [
        _ep(1, [(True, True, 2.0)], sample=0),  # solved at turn 1
        _ep(2, [(False, False, None), (True, True, 0.5)], sample=1),  # fixed at turn 2, slower
        _ep(3, [(True, False, None), (True, False, None), (False, False, None)], sample=2),  # never
        _ep(4, [(True, True, 4.0)], agent="one-shot", sample=0),
    ]
    s = summarize(eps, pass_k=[1, 2], fast_ps=[0, 1])
    assert s["episodes"] == 4 and s["turns"] == 7
    assert s["correct"] == pytest.approx(3 / 4)
    assert s["compiled"] == pytest.approx(1.0)
    assert s["fast_p"]["1"] == pytest.approx(2 / 4)  # 2.0 and 4.0
    assert s["speedup_geomean"] == pytest.approx((2.0 * 0.5 * 4.0) ** (1 / 3))
    # groups: fix-retry/math/add has 3 samples (2 correct); one-shot/math/add has 1 (correct)
    assert s["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert s["pass_at_k"]["2"] == pytest.approx(1.0)  # only the 3-sample group counts: 1 - C(1,2)/C(3,2) = 1
    assert s["tokens_per_correct"] == pytest.approx(7 * 200 / 3)
    assert s["mean_turns_to_correct"] == pytest.approx((1 + 2 + 1) / 3)
    rows = per_turn(eps, 3, pass_k=[1], fast_ps=[0, 1])
    assert [r["correct"] for r in rows] == pytest.approx([2 / 4, 3 / 4, 3 / 4])
    assert [r["reached"] for r in rows] == [4, 2, 1]
    assert rows[1]["correct_at"] == pytest.approx(1 / 2)  # at turn 2: episode 2 right, episode 3 wrong
    assert rows[0]["speedup_geomean"] == pytest.approx((2.0 * 4.0) ** 0.5)
