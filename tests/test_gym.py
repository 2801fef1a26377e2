"""The Gymnasium face: the API contract, rewards, termination and truncation."""

from __future__ import annotations

import pytest
from gymnasium.utils.env_checker import check_env
from warpgym.env import EvalResult, RewardConfig
from warpgym.tasks import get_task

import warpgym

ADD_SRC = get_task("math/add").solution_source()


@pytest.fixture
def env(cpu_evaluator):
    env = warpgym.make("math/add", device="cpu", max_turns=2, evaluator=cpu_evaluator)
    yield env
    env.close()


def test_check_env_passes(env):
    check_env(env, skip_render_check=True)


def test_reset_shows_the_task(env):
    obs, info = env.reset(seed=0)
    assert "def add(x: torch.Tensor, y: torch.Tensor)" in obs["task"]
    assert obs["turn"] == 0 and info["task_id"] == "math/add"
    assert env.observation_space.contains(obs)


def test_correct_candidate_terminates_with_reward(env):
    env.reset()
    obs, reward, terminated, truncated, info = env.step(ADD_SRC)
    assert terminated and not truncated
    assert reward == pytest.approx(1.0)  # correct; no timing on a CPU, so no speed bonus
    assert obs["correct"] == 1 and obs["compiled"] == 1
    assert EvalResult.from_dict(info["result"]).correct
    assert env.observation_space.contains(obs)


def test_turn_limit_truncates(env):
    env.reset()
    wrong = ADD_SRC.replace("x + y", "x - y")
    _, r1, term1, trunc1, _ = env.step(wrong)
    _, r2, term2, trunc2, _ = env.step(wrong)
    assert (r1, term1, trunc1) == (0.0, False, False)
    assert (r2, term2, trunc2) == (0.0, False, True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(wrong)


def test_reward_grows_with_speedup_and_needs_correctness():
    reward = RewardConfig()
    base = EvalResult(task="t", target="sm_90a", device="cuda", correct=True, speedup={"eager": 1.0})
    faster = EvalResult(task="t", target="sm_90a", device="cuda", correct=True, speedup={"eager": 4.0})
    wrong = EvalResult(task="t", target="sm_90a", device="cuda", correct=False, speedup={"eager": 9.0})
    missing = EvalResult(task="t", target="sm_90a", device="cuda", correct=True, speedup={"eager": 4.0},
                         required_features_met=False)
    assert reward(wrong) == 0.0
    assert reward(base) == pytest.approx(1.0)
    assert reward(faster) == pytest.approx(3.0)
    assert reward(missing) == 0.0


def test_action_must_be_text(env):
    env.reset()
    with pytest.raises(TypeError):
        env.step(b"bytes")
