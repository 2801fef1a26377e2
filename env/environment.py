"""The Gymnasium environment: an action is a candidate module's source; an observation is
the verdict (structured fields plus the feedback text).

``terminated`` means solved: correct, the required instructions present, and (on a GPU) at
least ``target_speedup`` times the chosen baseline. ``truncated`` means the turn budget ran
out. The full ``EvalResult`` is in ``info["result"]`` as a dict.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from warpgym.env.candidate import Candidate
from warpgym.env.judge.evaluator import Evaluator
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.result import STAGES, EvalResult
from warpgym.tasks import Task, get_task

MAX_TEXT = 200_000
CHARSET = string.printable


@dataclass(frozen=True)
class RewardConfig:
    """reward = 0 unless correct; then ``correct`` plus ``speed_weight * log2(speedup)`` (clipped at
    ``max_speed_bonus``, and never below 0 so a slow correct kernel still beats a wrong one), times
    ``missing_features_factor`` when required instructions are missing."""

    correct: float = 1.0
    speed_weight: float = 1.0
    max_speed_bonus: float = 3.0
    baseline: str = "eager"
    missing_features_factor: float = 0.0

    def __call__(self, result: EvalResult) -> float:
        if not result.correct:
            return 0.0
        reward = self.correct
        speedup = (result.speedup or {}).get(self.baseline)
        if speedup and speedup > 0:
            reward += self.speed_weight * min(max(math.log2(speedup), 0.0), self.max_speed_bonus)
        if result.required_features_met is False:
            reward *= self.missing_features_factor
        return float(reward)


def _text(value: str) -> str:
    """Feedback limited to the observation space's characters and length."""
    cleaned = "".join(ch if ch in CHARSET else "?" for ch in value)
    return cleaned[:MAX_TEXT]


class KernelEnv(gym.Env[dict[str, Any], str]):
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, task: Task | str, *, target: str = "sm_90a", device: str = "auto", max_turns: int = 8,
                 shape_sets: tuple[str, ...] = ("dev",), timing: bool = True, target_speedup: float = 1.0,
                 reward: RewardConfig | None = None, evaluator: Evaluator | None = None,
                 render_mode: str | None = None) -> None:
        self.task = get_task(task) if isinstance(task, str) else task
        self.options = EvalOptions(target=target, device=device, shape_sets=shape_sets, timing=timing)
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.max_turns = max_turns
        self.target_speedup = target_speedup
        self.reward_fn = reward or RewardConfig()
        self._evaluator = evaluator
        self._owns_evaluator = evaluator is None
        self.render_mode = render_mode
        self.turn = 0
        self.last_result: EvalResult | None = None
        self.action_space = spaces.Text(max_length=MAX_TEXT, charset=CHARSET)
        self.observation_space = spaces.Dict({
            "task": spaces.Text(max_length=MAX_TEXT, charset=CHARSET),
            "feedback": spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET),
            "stage": spaces.Discrete(len(STAGES)),
            "compiled": spaces.Discrete(2),
            "correct": spaces.Discrete(2),
            "speedup": spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float32),
            "turn": spaces.Discrete(max_turns + 1),
        })

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = Evaluator(self.options.device)
        return self._evaluator

    def _obs(self, result: EvalResult | None) -> dict[str, Any]:
        speedup = (result.speedup or {}).get(self.reward_fn.baseline, 0.0) if result else 0.0
        return {
            "task": _text(self.task.statement()),
            "feedback": _text(result.feedback if result else ""),
            "stage": STAGES.index(result.stage) if result else 0,
            "compiled": int(bool(result and result.compiled)),
            "correct": int(bool(result and result.correct)),
            "speedup": np.array([speedup if math.isfinite(speedup) else 0.0], dtype=np.float32),
            "turn": self.turn,
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.turn = 0
        self.last_result = None
        return self._obs(None), {"task_id": self.task.id, "statement": self.task.statement()}

    def step(self, action: str | Candidate) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str | Candidate):
            raise TypeError("an action is the candidate module's source text (or a Candidate with "
                            f"attachments), not {type(action).__name__}")
        if self.turn >= self.max_turns:
            raise RuntimeError("the episode is over (max_turns reached); call reset()")
        self.turn += 1
        result = self.evaluator.evaluate(self.task, action, self.options)
        self.last_result = result
        reward = self.reward_fn(result)
        speedup = (result.speedup or {}).get(self.reward_fn.baseline)
        fast_enough = speedup is None or speedup >= self.target_speedup
        terminated = bool(result.correct and result.required_features_met is not False and fast_enough)
        truncated = not terminated and self.turn >= self.max_turns
        # Wall-clock seconds stay out of info (see env.last_result) so a step is deterministic.
        info = {"result": {k: v for k, v in result.to_dict().items() if k != "seconds"}}
        return self._obs(result), reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.last_result.feedback if self.last_result else self.task.statement()
        return None

    def close(self) -> None:
        if self._owns_evaluator and self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None


def make(task_id: str, *, target: str = "sm_90a", device: str = "auto", max_turns: int = 8,
         **kwargs: Any) -> KernelEnv:
    """``warpgym.make("normalization/softmax", target="sm_90a", max_turns=8)``."""
    return KernelEnv(task_id, target=target, device=device, max_turns=max_turns, **kwargs)
