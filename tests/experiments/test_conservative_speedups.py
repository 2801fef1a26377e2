"""fast_p and "faster than the baseline" by the point estimate and by the interval's lower bound: in the
metrics, the run store and the environment's reward."""

from __future__ import annotations

import sqlite3

import pytest
from warpgym.env import EvalResult, RewardConfig
from warpgym.experiments.metrics import EpisodeView, TurnView, compute, summarize
from warpgym.experiments.store import Store


def _episode(i: int, speedup: float | None, low: float | None, correct: bool = True) -> EpisodeView:
    return EpisodeView(id=i, task=f"t{i}", category="c", agent="a", model="m", context="none", sample=0,
                       turns=[TurnView(turn=1, compiled=True, correct=correct, speedup=speedup,
                                       speedup_low=low)])


def test_fast_p_conservative_counts_only_speedups_whose_lower_bound_is_above_p():
    episodes = [_episode(0, 1.10, 0.95), _episode(1, 1.20, 1.05), _episode(2, 2.5, 1.6),
                _episode(3, 3.0, 2.9, correct=False)]
    s = summarize(episodes, fast_ps=(0.0, 1.0, 1.5))
    assert s["fast_p"] == {"0": 0.75, "1": 0.75, "1.5": 0.25}
    assert s["fast_p_conservative"] == {"0": 0.75, "1": 0.5, "1.5": 0.25}
    assert s["faster"] == 3 and s["faster_conservative"] == 2


def test_results_stored_before_intervals_have_no_conservative_fast_p():
    s = summarize([_episode(0, 1.3, None), _episode(1, 0.9, None)], fast_ps=(0.0, 1.0))
    assert s["fast_p"]["1"] == 0.5 and s["fast_p_conservative"]["1"] is None
    assert s["fast_p_conservative"]["0"] == 1.0


def _record(turn: int, speedup: float, low: float) -> dict:
    return {"turn": turn, "result": {"compiled": True, "correct": True, "speedup": {"eager": speedup},
                                     "speedup_low": {"eager": low}, "timing": []}}


def test_the_store_keeps_the_lower_bound_and_an_older_store_gains_the_column(tmp_path):
    path = tmp_path / "run.sqlite"
    old = sqlite3.connect(path)  # a store made before the column existed
    old.executescript(
        "CREATE TABLE turns (episode_id INTEGER NOT NULL, turn INTEGER NOT NULL, phase TEXT, stage TEXT, "
        "compiled INTEGER, correct INTEGER, arch_verified INTEGER, speedup REAL, roofline REAL, reward REAL, "
        "input_tokens INTEGER, output_tokens INTEGER, reasoning_tokens INTEGER, cost_usd REAL, "
        "latency_s REAL, eval_s REAL, cached INTEGER, record TEXT NOT NULL, created_at REAL NOT NULL, "
        "PRIMARY KEY (episode_id, turn));")
    old.close()
    with Store(path) as store:
        store.add_episodes([{"task": "math/add", "category": "math", "agent": "a", "model": "m",
                             "context": "none", "sample": 0}])
        (episode,) = store.episodes()
        store.add_turn(episode["id"], _record(1, 1.2, 0.97), "eager")
        store.add_turn(episode["id"], _record(2, 1.1, 1.04), "eager")
        assert [t["speedup_low"] for t in store.turns()] == [0.97, 1.04]
        overall = compute(store)["overall"]
    # The best turn is chosen by the point estimate (turn 1), and its lower bound is what counts.
    assert overall["fast_p"]["1"] == 1.0 and overall["fast_p_conservative"]["1"] == 0.0


def test_the_reward_uses_the_point_estimate_unless_set_to_the_conservative_one():
    result = EvalResult(task="math/add", target="sm_90a", device="gpu", correct=True,
                        speedup={"eager": 2.0}, speedup_low={"eager": 0.9})
    assert RewardConfig()(result) == pytest.approx(2.0)  # 1 + log2(2)
    assert RewardConfig(conservative=True)(result) == pytest.approx(1.0)  # below 1: no bonus
    result.speedup_low = {"eager": 1.5}
    assert RewardConfig(conservative=True)(result) == pytest.approx(1.0 + 0.5849625, rel=1e-6)


def test_the_episode_is_solved_by_the_reward_s_estimate(monkeypatch):
    from warpgym.env import KernelEnv

    result = EvalResult(task="math/add", target="sm_90a", device="gpu", stage="done", compiled=True,
                        correct=True, speedup={"eager": 1.05}, speedup_low={"eager": 0.98})

    class Fixed:
        def evaluate(self, task, candidate, options):
            return result

        def close(self):
            pass

    point = KernelEnv("math/add", device="cpu", evaluator=Fixed(), target_speedup=1.0)
    point.reset()
    assert point.step("source")[2] is True
    sure = KernelEnv("math/add", device="cpu", evaluator=Fixed(), target_speedup=1.0,
                     reward={"conservative": True})
    sure.reset()
    _, reward, terminated, _, _ = sure.step("source")
    assert terminated is False and reward == 1.0
