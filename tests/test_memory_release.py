"""A judge gives its cached GPU memory back after each check (Evaluation.release_memory), so that another
evaluation's bench phase alone on the GPU does not run out of memory beside a large check's answers."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.common.device import RESERVED_LIMIT
from warpgym.env.judge import evaluation as evaluation_mod
from warpgym.env.judge.correctness import LATE_SEED
from warpgym.env.judge.evaluation import Evaluation
from warpgym.tasks import get_task


def _judge(reserved: int, monkeypatch) -> list[str]:
    """What ``release_memory`` did on a GPU evaluation whose process holds ``reserved`` bytes cached."""
    events: list[str] = []

    @contextlib.contextmanager
    def shared():
        events.append("shared lock")
        yield
        events.append("unlocked")

    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device: reserved)
    monkeypatch.setattr(evaluation_mod, "release_cached_memory",
                        lambda device: events.append(f"release {device}"))
    Evaluation.release_memory(SimpleNamespace(on_gpu=True, device="cuda:0", gpu_shared=shared))
    return events


def test_a_large_cache_goes_back_under_the_shared_lock(monkeypatch):
    assert _judge(RESERVED_LIMIT + 1, monkeypatch) == ["shared lock", "release cuda:0", "unlocked"]


def test_a_small_cache_is_kept_and_no_lock_is_taken(monkeypatch):
    assert _judge(RESERVED_LIMIT, monkeypatch) == []


def test_every_judged_check_is_followed_by_a_release(monkeypatch):
    released: list[int] = []
    task = get_task("math/add")
    with Evaluator("cpu") as evaluator:
        def release(self) -> None:
            released.append(len(self.result.cases))

        monkeypatch.setattr(Evaluation, "release_memory", release)
        result = evaluator.evaluate(task, task.solution_candidate(), EvalOptions(device="cpu"))
    assert result.correct, result.feedback
    late = sum(1 for case in result.cases if case.seed >= LATE_SEED - 1)  # the late re-check's own calls
    assert late >= 1 and released == list(range(1, len(result.cases) - late + 1)), \
        "a release after each check, once its case is recorded"


def test_the_judge_gives_the_windows_memory_back_before_the_bench_check_after_it(monkeypatch):
    """The baselines' inputs and outputs of a timing window stay in the judge's cache after it: they go back
    before the worker's bench check, which needs the memory, and the check then holds the GPU alone."""
    from warpgym.env.judge import bench

    events: list[str] = []

    @contextlib.contextmanager
    def lock(index, shared=False):
        events.append(f"lock {index} {'shared' if shared else 'alone'}")
        yield
        events.append("unlock")

    monkeypatch.setattr("warpgym.env.common.timing.gpu_lock", lock)
    ev = SimpleNamespace(device="cuda:0", release_memory=lambda: events.append("release"),
                         run=lambda check, settle_ms: events.append(f"run {check}") or "reply")
    assert bench.check_after_window(ev, "the check") == "reply"
    assert events == ["release", "lock 0 alone", "run the check", "unlock"]
