"""The Gymnasium face: the API contract, rewards, termination and truncation."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from typing import Any

import gymnasium
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from warpgym.env import Candidate, EpisodeOver, EvalResult, RewardConfig
from warpgym.env.environment import MAX_SOURCE_CHARS, KernelEnv
from warpgym.env.registration import GENERIC_ID, TASK_IDS_FILE, bundled_task_ids, gym_id, task_id
from warpgym.tasks import CATEGORIES, all_tasks, get_task

import warpgym

ADD_SRC = get_task("math/add").solution_source()


@pytest.fixture
def env(cpu_evaluator):
    env = warpgym.make("math/add", device="cpu", max_turns=2, evaluator=cpu_evaluator)
    yield env
    env.close()


class RecordingEvaluator:
    """Stands in for the evaluator: records what it was given and answers with a fixed verdict."""

    def __init__(self, correct: bool = True) -> None:
        self.correct = correct
        self.calls: list[Any] = []

    def evaluate(self, task: Any, source: Any, options: Any = None) -> EvalResult:
        self.calls.append(source)
        return EvalResult(task=task.id, target="sm_90a", device="cpu", stage="done", compiled=True,
                          correct=self.correct, feedback="Verdict: recorded")

    def close(self) -> None:
        pass


def _gym_warnings(check: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check()
    return [str(w.message) for w in caught]


def test_check_env_passes_without_warnings(env):
    assert _gym_warnings(lambda: check_env(env)) == []
    assert env.spec is not None and env.spec.id == "warpgym/math-add-v0"
    assert env.spec.kwargs["device"] == "cpu" and "evaluator" not in env.spec.kwargs
    assert env.spec.nondeterministic is False  # no timing on a CPU


def test_gymnasium_make_by_registered_id(cpu_evaluator):
    env = gymnasium.make("warpgym/math-add-v0", device="cpu", max_turns=2, evaluator=cpu_evaluator)
    try:
        inner = env.unwrapped
        assert isinstance(inner, KernelEnv) and inner.task.id == "math/add" and inner.max_turns == 2
        assert inner._evaluator is cpu_evaluator
        assert inner.spec.id == "warpgym/math-add-v0" and "evaluator" not in inner.spec.kwargs
        assert _gym_warnings(lambda: check_env(inner)) == []
        obs, _ = env.reset(seed=0)
        assert "def add(" in obs["task"]
    finally:
        env.close()
    generic = gymnasium.make(GENERIC_ID, task="math/add", device="cpu")
    assert generic.unwrapped.task.id == "math/add"
    generic.close()


def test_ids_map_both_ways_and_the_index_matches_the_registry():
    assert gym_id("normalization/softmax") == "warpgym/normalization-softmax-v0"
    assert task_id("warpgym/normalization-softmax-dim0-v0") == "normalization/softmax-dim0"
    assert not any("-" in c for c in CATEGORIES)
    ids = [t.id for t in all_tasks()]
    stale = f"{TASK_IDS_FILE.name} is stale: run warpgym.env.registration.write_task_ids()"
    assert bundled_task_ids() == ids, stale
    assert all(task_id(gym_id(i)) == i for i in ids)
    for bad in ("softmax", "a-b/c"):
        with pytest.raises(ValueError, match="category/name"):
            gym_id(bad)
    with pytest.raises(ValueError, match="not a warpgym task id"):
        task_id("CartPole-v1")


def test_importing_warpgym_registers_every_task_without_loading_them():
    code = ("import sys, warpgym, gymnasium, json; r = gymnasium.envs.registry; "
            "print(json.dumps([sorted(k for k in r if k.startswith('warpgym/')), 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    registered, torch_loaded = json.loads(out)
    assert not torch_loaded
    assert set(registered) == {gym_id(t) for t in bundled_task_ids()} | {GENERIC_ID}


def test_reset_shows_the_task_and_nothing_measured(env):
    obs, info = env.reset(seed=0)
    assert "def add(x: torch.Tensor, y: torch.Tensor)" in obs["task"]
    assert obs["turn"] == 0 and info["task_id"] == "math/add"
    assert obs["correct"] is None and obs["speedup"] is None
    assert env.observation_space.contains(obs)


def test_correct_candidate_terminates_with_reward(env):
    env.reset()
    obs, reward, terminated, truncated, info = env.step(ADD_SRC)
    assert terminated and not truncated
    assert reward == pytest.approx(1.0)  # correct; no timing on a CPU, so no speed bonus
    assert obs["correct"] == 1 and obs["compiled"] == 1
    assert obs["speedup"] is None  # not measured on a CPU, which is not a speedup of 0
    assert EvalResult.from_dict(info["result"]).correct
    assert env.observation_space.contains(obs)
    with pytest.raises(EpisodeOver, match=r"solved at turn 1.*reset\(\)"):
        env.step(ADD_SRC)


def test_each_step_draws_its_inputs_afresh_and_info_keeps_the_root_from_the_agent(env):
    roots = []
    for _ in range(2):
        env.reset(seed=0)
        obs, _, _, _, info = env.step(ADD_SRC)
        assert "input_seed" not in info["result"] and "seconds" not in info["result"]
        root = env.last_result.input_seed
        assert root is not None and str(root) not in obs["feedback"]
        roots.append(root)
    assert roots[0] != roots[1]  # the same reset seed, other inputs


def test_turn_limit_truncates_and_then_refuses(env):
    env.reset()
    wrong = ADD_SRC.replace("x + y", "x - y")
    _, r1, term1, trunc1, _ = env.step(wrong)
    _, r2, term2, trunc2, _ = env.step(wrong)
    assert (r1, term1, trunc1) == (0.0, False, False)
    assert (r2, term2, trunc2) == (0.0, False, True)
    with pytest.raises(ResetNeeded, match="turn budget"):
        env.step(wrong)
    env.reset()
    assert env.step(wrong)[4]["result"]["correct"] is False  # a reset starts a new episode


def test_continue_after_solved_is_asked_for_at_reset():
    fake = RecordingEvaluator(correct=True)
    env = KernelEnv("math/add", device="cpu", max_turns=3, evaluator=fake)
    env.reset(options={"continue_after_solved": True})
    outcomes = [env.step(ADD_SRC)[2:4] for _ in range(3)]
    assert outcomes == [(True, False)] * 3 and len(fake.calls) == 3
    with pytest.raises(EpisodeOver, match="turn budget"):
        env.step(ADD_SRC)
    env.reset()
    env.step(ADD_SRC)
    with pytest.raises(EpisodeOver, match="solved"):
        env.step(ADD_SRC)


def test_a_candidate_is_forwarded_to_the_evaluator_as_it_is():
    fake = RecordingEvaluator()
    env = KernelEnv("math/add", device="cpu", evaluator=fake)
    env.reset()
    candidate = Candidate(ADD_SRC, {"add.ptx": "// ptx"})
    env.step(candidate)
    assert fake.calls == [candidate] and fake.calls[0] is candidate


def test_an_oversized_action_is_refused_before_anything_is_judged():
    fake = RecordingEvaluator()
    env = KernelEnv("math/add", device="cpu", max_turns=3, evaluator=fake)
    env.reset()
    huge = "x = 1\n" * (50_000_000 // 6)
    for action in (huge, Candidate(huge)):
        obs, reward, terminated, truncated, info = env.step(action)
        assert fake.calls == [] and reward == 0.0 and not terminated
        assert obs["correct"] == 0 and obs["compiled"] == 0 and env.observation_space.contains(obs)
        assert info["result"]["violations"][0]["code"] == "too-large"
        assert f"at most {MAX_SOURCE_CHARS:,}" in obs["feedback"] and "REJECTED" in obs["feedback"]
    assert env.step(ADD_SRC)[2] and fake.calls == [ADD_SRC]  # the size rule only refuses what is too long


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


def test_a_measured_speedup_is_in_the_observation():
    class Timed(RecordingEvaluator):
        def evaluate(self, task: Any, source: Any, options: Any = None) -> EvalResult:
            result = super().evaluate(task, source, options)
            result.speedup = {"eager": 2.5, "torch.compile": 1.1}
            return result

    env = KernelEnv("math/add", device="cpu", evaluator=Timed(), reward={"baseline": "torch.compile"})
    env.reset()
    obs = env.step(ADD_SRC)[0]
    assert obs["speedup"].tolist() == pytest.approx([1.1]) and env.observation_space.contains(obs)
    assert env.spec.kwargs["reward"]["baseline"] == "torch.compile"


def test_envs_share_one_evaluator_in_a_vector_env(cpu_evaluator):
    envs = gymnasium.vector.SyncVectorEnv([
        lambda task=task: warpgym.make(task, device="cpu", max_turns=2, evaluator=cpu_evaluator)
        for task in ("math/add", "normalization/softmax")
    ])
    try:
        obs, _ = envs.reset(seed=0)
        assert "def add(" in obs["task"][0] and "def softmax(" in obs["task"][1]
        obs, rewards, terminated, _, _ = envs.step((ADD_SRC, ADD_SRC))  # no softmax in the second
        assert rewards.tolist() == [1.0, 0.0] and terminated.tolist() == [True, False]
        assert obs["speedup"] == (None, None) and obs["correct"][0] == 1
    finally:
        envs.close()


def test_action_must_be_text(env):
    env.reset()
    with pytest.raises(TypeError, match="Candidate"):
        env.step(b"bytes")


def test_a_timed_verdict_without_the_baselines_figure_does_not_solve_the_episode():
    """A baseline that failed beside the candidate (out of memory, say) leaves no speedup: that is not the
    target reached, whereas an untimed verdict (timing off, a CPU) ends on correctness alone."""
    from warpgym.env.judge.result import Timing

    class BaselineLost(RecordingEvaluator):
        def evaluate(self, task: Any, source: Any, options: Any = None) -> EvalResult:
            result = super().evaluate(task, source, options)
            result.timing = [Timing(case={"n": 1}, median_ms=1.0, min_ms=1.0, max_ms=1.0, runs=6)]
            result.speedup = {}
            return result

    lost = KernelEnv("math/add", device="cpu", evaluator=BaselineLost(), max_turns=3)
    lost.reset()
    assert lost.step(ADD_SRC)[2] is False
    untimed = KernelEnv("math/add", device="cpu", evaluator=RecordingEvaluator(), max_turns=3)
    untimed.reset()
    assert untimed.step(ADD_SRC)[2] is True
