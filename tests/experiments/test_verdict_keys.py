"""The verdict caches (a run's ``VerdictCache``, the server's journal) key on every option that changes a
verdict or its speedups: two evaluations that differ only in one of them are judged twice, never answered
from each other's entry. The reward is computed from the verdict outside the cache, so it is not keyed."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from warpgym.env import EvalOptions, EvalResult
from warpgym.env.judge.options import Limits, PairedTiming
from warpgym.experiments.pool import EvaluatorPool
from warpgym.experiments.serve.cache import verdict_key as serve_key
from warpgym.experiments.serve.models import Submission
from warpgym.experiments.serve.service import eval_options
from warpgym.experiments.verdict_cache import verdict_key
from warpgym.tasks import get_task
from warpgym.tasks.fingerprint import task_fingerprint

BASE = EvalOptions(device="cpu")
VARIANTS = {
    "shape sets": EvalOptions(device="cpu", shape_sets=("dev", "heldout")),
    "target": EvalOptions(device="cpu", target="sm_100a"),
    "timing off": EvalOptions(device="cpu", timing=False),
    "warm-up": EvalOptions(device="cpu", warmup=9),
    "repetitions": EvalOptions(device="cpu", reps=100),
    "paired budget": EvalOptions(device="cpu", paired=PairedTiming(budget_seconds=1.0)),
    "paired rounds": EvalOptions(device="cpu", paired=PairedTiming(min_rounds=8, max_rounds=20)),
    "paired precision": EvalOptions(device="cpu", paired=PairedTiming(precision=0.05)),
    "paired blocks": EvalOptions(device="cpu", paired=PairedTiming(block_calls=3)),
    "traced sample": EvalOptions(device="cpu", paired=PairedTiming(traced_blocks=4)),
    "tracing off": EvalOptions(device="cpu", paired=PairedTiming(traced_blocks=0)),
    "trace seed": EvalOptions(device="cpu", paired=PairedTiming(trace_seed=5)),
    "settling rounds": EvalOptions(device="cpu", paired=PairedTiming(settling_rounds=3)),
    "limits": EvalOptions(device="cpu", limits=Limits(run=5.0)),
    "profile": EvalOptions(device="cpu", profile=True),
    "memcheck": EvalOptions(device="cpu", memcheck=True),
    "input seed": EvalOptions(device="cpu", input_seed=5),
    "another input seed": EvalOptions(device="cpu", input_seed=6),
    "reveal shapes": EvalOptions(device="cpu", reveal_shapes=False),
    "device": EvalOptions(device="cuda"),
}


class CountingExecutor:
    """Stands in for the evaluators: counts what reaches it and answers a verdict that names the options."""

    kind = "cpu"
    slots = ["cpu"]

    def __init__(self) -> None:
        self.calls: list[EvalOptions] = []

    def evaluate(self, task: Any, candidate: Any, options: EvalOptions) -> EvalResult:
        self.calls.append(options)
        return EvalResult(task=task.id, target=options.target, device="cpu", correct=True,
                          speedup={"eager": float(options.paired.budget_seconds)})

    def close(self) -> None:
        pass


def test_every_option_that_changes_a_verdict_changes_the_run_s_key():
    task = get_task("math/add")
    base = verdict_key(task, "src", BASE)
    assert verdict_key(task, "src", EvalOptions(device="cpu")) == base
    keys = {name: verdict_key(task, "src", options) for name, options in VARIANTS.items()}
    assert base not in keys.values(), [n for n, k in keys.items() if k == base]
    assert len(set(keys.values())) == len(keys)


@pytest.mark.parametrize("name", ["paired budget", "traced sample", "timing off", "shape sets", "input seed"])
def test_two_evaluations_that_differ_only_in_one_option_share_no_cache_entry(name):
    executor = CountingExecutor()
    pool = EvaluatorPool(executor=executor)
    task = get_task("math/add")
    first = pool.evaluate(task, "src", BASE)
    other = pool.evaluate(task, "src", VARIANTS[name])
    again = pool.evaluate(task, "src", dataclasses.replace(BASE))
    assert [o is VARIANTS[name] for o in executor.calls] == [False, True], "each judged once, by itself"
    assert pool.cache_hits == 1 and again.to_dict() == first.to_dict()
    if name == "paired budget":
        assert other.speedup != first.speedup  # the verdict of the other options, not the cached one


def _sub(**options: Any) -> Submission:
    return Submission(task="math/add", source="def add(x, y): ...\n", options=options)


def test_the_server_s_key_covers_the_judge_settings_it_chooses_itself():
    """The client cannot set the paired timing or its traced sample, but the server's judge may change them
    under one version (a development checkout): the key holds the EvalOptions the judge is given."""
    sub = _sub()
    judged = eval_options(sub.options.model_dump(mode="json"), "cuda")
    task_print = task_fingerprint(get_task("math/add"))
    base = serve_key(sub, "cuda:H200:1", judged, task_print)
    assert serve_key(sub, "cuda:H200:1", eval_options(sub.options.model_dump(mode="json"), "cuda"),
                     task_print) == base
    for paired in (PairedTiming(traced_blocks=0), PairedTiming(budget_seconds=2.0),
                   PairedTiming(max_rounds=30)):
        assert serve_key(sub, "cuda:H200:1", dataclasses.replace(judged, paired=paired), task_print) != base
    assert judged.input_seed is None  # a client never chooses the root of its inputs
    assert serve_key(sub, "cuda:H200:1", dataclasses.replace(judged, input_seed=3), task_print) != base
    timed_off = _sub(timing=False)
    assert serve_key(timed_off, "cuda:H200:1", eval_options(timed_off.options.model_dump(mode="json"),
                                                             "cuda"), task_print) != base
    assert serve_key(sub, "cpu:cpu:1", judged, task_print) != base
