"""A reward function for TRL's GRPO trainer that scores kernels through ``warpgym serve``.

    from warpgym.experiments.serve.reward import KernelReward
    trainer = GRPOTrainer(model=..., reward_funcs=[KernelReward("http://gpu-box:8765")],
                          train_dataset=dataset)        # a "prompt" column and a "task_id" column

GRPO calls it as ``reward(prompts=..., completions=..., completion_ids=..., task_id=[...], ...)``:
each completion (plain text, or a conversation whose last message is the model's) goes through the
same extraction as the agent loops (``agents/extract.py``), is judged by the server, and its verdict
is scored by the environment's ``RewardConfig``, so a reward here is what ``env.step`` would return
for the same candidate and options. A completion with no module in it, or one too long to judge,
scores 0 without reaching the server (as ``env.step`` scores a refused source). ``AsyncKernelReward``
is the same for TRL's asyncio path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from .client import DEFAULT_URL, AsyncServeClient, ServeClient, item


def completion_text(completion: Any) -> str:
    """The model's answer: the text itself, or the content of a conversation's last message."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        content = completion[-1].get("content", "")
        if isinstance(content, str):
            return content
        if isinstance(content, Sequence):  # content parts: [{"type": "text", "text": ...}, ...]
            return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    raise TypeError(f"a completion is text or a list of chat messages, not {type(completion).__name__}")


@lru_cache(maxsize=4096)
def _entrypoint(task_id: str) -> str:
    from warpgym.tasks import get_task

    return get_task(task_id).entrypoint


class _Scoring:
    __name__ = "warpgym_kernel"
    """The name TRL logs this reward under (``rewards/warpgym_kernel``)."""

    def __init__(self, *, task_column: str, reward: Any, target: str, shape_sets: Sequence[str], timing: bool,
                 options: Mapping[str, Any] | None, priority: int, timeout_s: float | None) -> None:
        from warpgym.env.environment import RewardConfig

        self.task_column = task_column
        self.reward_fn = RewardConfig(**reward) if isinstance(reward, Mapping) else reward or RewardConfig()
        self.options = {"target": target, "shape_sets": list(shape_sets), "timing": timing, **(options or {})}
        self.priority = priority
        self.timeout_s = timeout_s
        self.last_results: list[dict[str, Any] | None] = []
        """The verdict behind each reward of the latest call (None: nothing reached the judge)."""

    def _items(self, completions: Sequence[Any], kwargs: Mapping[str, Any]
               ) -> tuple[list[dict[str, Any]], list[int]]:
        """What to submit, and for which completions; the others score 0."""
        from warpgym.agents.extract import extract_candidate
        from warpgym.env.environment import MAX_SOURCE_CHARS

        if self.task_column not in kwargs:
            columns = ", ".join(sorted(k for k in kwargs if not k.startswith(("log_", "trainer_")))) or "none"
            raise KeyError(f"the dataset needs a {self.task_column!r} column naming each prompt's task "
                           f"(columns passed: {columns})")
        tasks = kwargs[self.task_column]
        if len(tasks) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(tasks)} {self.task_column} values")
        items, where = [], []
        for i, (completion, task_id) in enumerate(zip(completions, tasks, strict=True)):
            found = extract_candidate(completion_text(completion), _entrypoint(task_id))
            if found.code is None or len(found.code) > MAX_SOURCE_CHARS:
                continue
            items.append(item(task_id, found.code, attachments=dict(found.attachments), options=self.options,
                              priority=self.priority))
            where.append(i)
        return items, where

    def _score(self, count: int, where: list[int], results: list[dict[str, Any]],
               kwargs: Mapping[str, Any]) -> list[float]:
        from warpgym.env import EvalResult

        self.last_results = [None] * count
        rewards = [0.0] * count
        for i, result in zip(where, results, strict=True):
            self.last_results[i] = result
            rewards[i] = self.reward_fn(EvalResult.from_dict(result))
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if callable(log_metric) and count:
            correct = sum(bool(r and r.get("correct")) for r in self.last_results)
            log_metric("warpgym/correct", correct / count)
            log_metric("warpgym/judged", len(where) / count)
        if callable(log_extra):
            log_extra("warpgym_stage", [r.get("stage") if r else "no-module" for r in self.last_results])
        return rewards


class KernelReward(_Scoring):
    """``(prompts, completions, **columns) -> list[float]``, scored by the server at ``url``."""

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, task_column: str = "task_id",
                 reward: Any = None, target: str = "sm_90a", shape_sets: Sequence[str] = ("dev",),
                 timing: bool = True, options: Mapping[str, Any] | None = None, priority: int = 0,
                 timeout_s: float | None = None, client: ServeClient | None = None) -> None:
        super().__init__(task_column=task_column, reward=reward, target=target, shape_sets=shape_sets,
                         timing=timing, options=options, priority=priority, timeout_s=timeout_s)
        self.client = client or ServeClient(url, token=token)

    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        items, where = self._items(completions, kwargs)
        results = self.client.evaluate_many(items, self.timeout_s) if items else []
        return self._score(len(completions), where, results, kwargs)


class AsyncKernelReward(_Scoring):
    """``KernelReward`` whose call is a coroutine (TRL awaits async reward functions together)."""

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, task_column: str = "task_id",
                 reward: Any = None, target: str = "sm_90a", shape_sets: Sequence[str] = ("dev",),
                 timing: bool = True, options: Mapping[str, Any] | None = None, priority: int = 0,
                 timeout_s: float | None = None) -> None:
        super().__init__(task_column=task_column, reward=reward, target=target, shape_sets=shape_sets,
                         timing=timing, options=options, priority=priority, timeout_s=timeout_s)
        self.url, self.token = url, token

    async def __call__(self, prompts: Any = None, completions: Sequence[Any] = (),
                       **kwargs: Any) -> list[float]:
        items, where = self._items(completions, kwargs)
        results: list[dict[str, Any]] = []
        if items:
            async with AsyncServeClient(self.url, token=self.token) as client:
                results = await client.evaluate_many(items, self.timeout_s)
        return self._score(len(completions), where, results, kwargs)
