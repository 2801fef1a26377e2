"""The Gymnasium environment: an action is a candidate (a module's source, or a ``Candidate`` with
attachments); an observation is the verdict (structured fields plus the feedback text).

``terminated`` means solved: correct, the required instructions present, and (on a GPU) at
least ``target_speedup`` times the chosen baseline. ``truncated`` means the turn budget ran
out. After either, ``step`` raises ``EpisodeOver`` until ``reset``; ``reset(options=
{"continue_after_solved": True})`` lets a loop keep optimising a solved episode until the turn
budget is spent. The full ``EvalResult`` is in ``info["result"]`` as a dict, less its wall-clock
``seconds`` and its ``input_seed``.

Every step's evaluation draws its inputs from a root of its own, drawn afresh and kept from the agent
(``EvalOptions.input_seed``, env/judge/seeds.py): ``reset(seed=...)`` seeds Gymnasium's generator, never
the judge's inputs, and no step's root tells anything of the next one's. A candidate that prints its
inputs into its feedback learns the inputs of an evaluation that is over. ``env.last_result`` keeps the
root, to replay a verdict (the agent loops record it with each turn).

What was not measured is ``None`` in the observation, never 0: ``speedup`` without a timing stage
(on a CPU, or with ``timing=False``) and ``correct`` when the device could not check the candidate.
A source longer than ``MAX_SOURCE_CHARS`` is refused with a verdict before anything runs.

Gymnasium ids (``warpgym/normalization-softmax-v0``) are in ``registration``; an environment made
with ``make`` or ``KernelEnv`` carries the same ``spec``.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
from gymnasium.error import ResetNeeded
from warpgym.env.candidate import Candidate
from warpgym.env.evaluates import Evaluates
from warpgym.env.judge import feedback as feedback_mod
from warpgym.env.judge.evaluator import Evaluator
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.result import STAGES, EvalResult, Violation
from warpgym.env.maybe_space import Maybe
from warpgym.env.registration import ENTRY_POINT, GENERIC_ID, gym_id
from warpgym.tasks import Task, UnknownTaskError, get_task

MAX_TEXT = 200_000
"""Characters of the task statement and the feedback in an observation."""
MAX_SOURCE_CHARS = 200_000
"""Characters of a candidate's module source; the action space says the same."""
MAX_SPEEDUP = 1e6
"""The observation's ceiling for a speedup (a finite bound; anything near it is flagged anyway)."""
CHARSET = string.printable


class EpisodeOver(ResetNeeded, RuntimeError):
    """``step`` after the episode terminated or was truncated: call ``reset`` first."""


@dataclass(frozen=True)
class RewardConfig:
    """reward = 0 unless correct; then ``correct`` plus ``speed_weight * log2(speedup)`` (clipped at
    ``max_speed_bonus``, and never below 0 so a slow correct kernel still beats a wrong one), times
    ``missing_features_factor`` when required instructions are missing.

    The speedup is the paired timing's point estimate (the median of its rounds' ratios); with
    ``conservative`` it is its 95% interval's lower bound, so noise never earns a bonus. The episode's
    ``target_speedup`` is judged by the same estimate."""

    correct: float = 1.0
    speed_weight: float = 1.0
    max_speed_bonus: float = 3.0
    baseline: str = "eager"
    missing_features_factor: float = 0.0
    conservative: bool = False

    def speedup(self, result: EvalResult) -> float | None:
        return result.speedup_by(self.baseline, conservative=self.conservative)

    def __call__(self, result: EvalResult) -> float:
        if not result.correct:
            return 0.0
        reward = self.correct
        speedup = self.speedup(result)
        if speedup and speedup > 0:
            reward += self.speed_weight * min(max(math.log2(speedup), 0.0), self.max_speed_bonus)
        if result.required_features_met is False:
            reward *= self.missing_features_factor
        return float(reward)


def _text(value: str) -> str:
    """Feedback limited to the observation space's characters and length."""
    cleaned = "".join(ch if ch in CHARSET else "?" for ch in value)
    return cleaned[:MAX_TEXT]


INFO_LEFT_OUT = ("seconds", "input_seed")
"""Fields of the verdict ``info["result"]`` leaves out."""


def _speedup(value: float | None) -> np.ndarray | None:
    if value is None or math.isnan(value):
        return None
    return np.array([min(max(value, 0.0), MAX_SPEEDUP)], dtype=np.float32)


class KernelEnv(gym.Env[dict[str, Any], str | Candidate]):
    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # text frames; the rate only matters to recorders

    def __init__(self, task: Task | str, *, target: str = "sm_90a", device: str = "auto", max_turns: int = 8,
                 shape_sets: tuple[str, ...] = ("dev",), timing: bool = True, target_speedup: float = 1.0,
                 reward: RewardConfig | Mapping[str, Any] | None = None, evaluator: Evaluates | None = None,
                 render_mode: str | None = None) -> None:
        self.task = get_task(task) if isinstance(task, str) else task
        self.options = EvalOptions(target=target, device=device, shape_sets=tuple(shape_sets), timing=timing)
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.max_turns = max_turns
        self.target_speedup = target_speedup
        self.reward_fn = RewardConfig(**reward) if isinstance(reward, Mapping) else reward or RewardConfig()
        self._evaluator = evaluator
        self._owns_evaluator = evaluator is None
        self.render_mode = render_mode
        self.turn = 0
        self.last_result: EvalResult | None = None
        self._ended: str | None = None
        self._continue_after_solved = False
        self.action_space = spaces.Text(max_length=MAX_SOURCE_CHARS, charset=CHARSET)
        self.observation_space = spaces.Dict({
            "task": spaces.Text(max_length=MAX_TEXT, charset=CHARSET),
            "feedback": spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET),
            "stage": spaces.Discrete(len(STAGES)),
            "compiled": spaces.Discrete(2),
            "correct": Maybe(spaces.Discrete(2)),
            "speedup": Maybe(spaces.Box(0.0, MAX_SPEEDUP, shape=(1,), dtype=np.float32)),
            "turn": spaces.Discrete(max_turns + 1),
        })
        self.spec = self._own_spec(target, device, max_turns, shape_sets, timing, target_speedup, render_mode)

    # ------------------------------------------------------------------ the spec
    def _own_spec(self, target: str, device: str, max_turns: int, shape_sets: tuple[str, ...], timing: bool,
                  target_speedup: float, render_mode: str | None) -> EnvSpec:
        """What ``gymnasium.make`` would have recorded, for an environment made directly."""
        try:
            # imported suites are not registered with Gymnasium (they exist only where they were imported)
            registered = get_task(self.task.id) is self.task and self.task.model is None
        except UnknownTaskError:
            registered = False
        kwargs = {"task": self.task.id if registered else self.task, "target": target, "device": device,
                  "max_turns": max_turns, "shape_sets": list(shape_sets), "timing": timing,
                  "target_speedup": target_speedup, "reward": asdict(self.reward_fn),
                  "render_mode": render_mode}
        return EnvSpec(id=gym_id(self.task.id) if registered else GENERIC_ID, entry_point=ENTRY_POINT,
                       nondeterministic=bool(timing and device != "cpu"), kwargs=kwargs)

    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]
        return self._spec

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        """An evaluator is a running resource, not a setting: a spec recreates the environment with an
        evaluator of its own (and stays deep-copyable for ``spec.make`` and ``check_env``)."""
        if value is not None and "evaluator" in value.kwargs:
            value = replace(value, kwargs={k: v for k, v in value.kwargs.items() if k != "evaluator"})
        self._spec = value

    # ------------------------------------------------------------------ the evaluator
    @property
    def evaluator(self) -> Evaluates:
        if self._evaluator is None:
            self._evaluator = Evaluator(self.options.device)
        return self._evaluator

    def _obs(self, result: EvalResult | None) -> dict[str, Any]:
        speedup = (result.speedup or {}).get(self.reward_fn.baseline) if result else None
        return {
            "task": _text(self.task.statement()),
            "feedback": _text(result.feedback if result else ""),
            "stage": STAGES.index(result.stage) if result else 0,
            "compiled": int(bool(result and result.compiled)),
            "correct": None if result is None or result.correct is None else int(result.correct),
            "speedup": _speedup(speedup),
            "turn": self.turn,
        }

    def _refused(self, size: int) -> EvalResult:
        """The verdict on a source too long to judge; nothing reaches the evaluator."""
        result = EvalResult(task=self.task.id, target=self.options.target, device=self.options.device,
                            correct=False)
        result.violations.append(Violation(
            "too-large", f"the module's source is {size:,} characters; at most {MAX_SOURCE_CHARS:,} are "
                         "judged, so nothing was run"))
        result.feedback = feedback_mod.render(result, self.task, self.options.reveal_shapes)
        return result

    # ------------------------------------------------------------------ the Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``options``: ``{"continue_after_solved": True}`` accepts steps after a solved turn."""
        super().reset(seed=seed)
        self.turn = 0
        self.last_result = None
        self._ended = None
        self._continue_after_solved = bool((options or {}).get("continue_after_solved", False))
        return self._obs(None), {"task_id": self.task.id, "statement": self.task.statement()}

    def step(self, action: str | Candidate) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str | Candidate):
            raise TypeError("an action is the candidate module's source text or a Candidate, not "
                            f"{type(action).__name__}")
        if self._ended is not None:
            raise EpisodeOver(f"the episode is over ({self._ended} at turn {self.turn}); call reset() "
                              "before the next step")
        self.turn += 1
        source = action.source if isinstance(action, Candidate) else action
        if len(source) > MAX_SOURCE_CHARS:
            result = self._refused(len(source))
        else:
            result = self.evaluator.evaluate(self.task, action, self.options)  # a Candidate goes as it is
        self.last_result = result
        reward = self.reward_fn(result)
        speedup = self.reward_fn.speedup(result)
        # Untimed (timing off, or a CPU): correctness ends it. Timed with no figure against the chosen
        # baseline (it failed or ran out of memory beside the candidate): not shown to be fast enough.
        fast_enough = speedup >= self.target_speedup if speedup is not None else not result.timing
        terminated = bool(result.correct and result.required_features_met is not False and fast_enough)
        truncated = not terminated and self.turn >= self.max_turns
        if terminated and not self._continue_after_solved:
            self._ended = "solved"
        elif self.turn >= self.max_turns:
            self._ended = "the turn budget is spent"
        # Wall-clock seconds and the inputs' root stay out of info (see env.last_result): a step is
        # deterministic, and the agent is never handed the root.
        info = {"result": {k: v for k, v in result.to_dict().items() if k not in INFO_LEFT_OUT}}
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
    """``warpgym.make("normalization/softmax", target="sm_90a", max_turns=8)``; the same environment as
    ``gymnasium.make("warpgym/normalization-softmax-v0", ...)`` without Gymnasium's wrappers."""
    return KernelEnv(task_id, target=target, device=device, max_turns=max_turns, **kwargs)
