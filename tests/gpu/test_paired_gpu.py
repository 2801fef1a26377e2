"""Paired timing on a real GPU, end to end: the speedup with its interval, what ended the rounds, and the
machine's state from NVML (run on the H200 machine: scripts/gpu_session.sh)."""

from __future__ import annotations

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge.options import PairedTiming
from warpgym.tasks import get_task

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_evaluator():
    with Evaluator("cuda") as evaluator:
        yield evaluator


PAIRS = [("matmul/matmul", "vendor"), ("normalization/softmax", "eager"), ("math/add", "eager")]


@pytest.mark.parametrize(("task_id", "baseline"), PAIRS)
def test_a_reference_is_timed_paired_with_an_interval_and_the_machine_state(gpu_evaluator, task_id, baseline):
    task = get_task(task_id)
    result = gpu_evaluator.evaluate(task, task.solution_source(), EvalOptions(device="cuda"))
    assert result.correct and result.stage == "done", result.feedback
    settings = PairedTiming()
    for t in result.timing:
        ratio = t.ratios[baseline]
        assert ratio.low <= ratio.median <= ratio.high and ratio.rounds == t.rounds >= 2
        assert t.ended_by in ("precision", "budget")
        if t.ended_by == "precision":
            assert t.rounds >= settings.min_rounds and ratio.coverage >= 0.95
            assert (ratio.high - ratio.low) / (2 * ratio.median) <= settings.precision
        assert t.runs == t.rounds * t.block_calls and t.median_ms > 0
        assert t.machine is not None and t.machine.sampled, t.machine
        assert t.machine.samples >= 2 and t.machine.sm_clock_mhz["max"] > 0 and t.machine.power_w
        print(f"\n{task_id} {t.case}: {baseline} {ratio.median:.3f}x [{ratio.low:.3f}, {ratio.high:.3f}] "
              f"in {t.rounds} rounds of {t.block_calls}, ended by {t.ended_by}; "
              f"SM {t.machine.sm_clock_mhz}, {t.machine.power_w} W, reasons {t.machine.reasons}")
    low, point = result.speedup_low[baseline], result.speedup[baseline]
    assert low <= point <= result.speedup_high[baseline]
    assert "paired rounds" in result.feedback and f"Faster than {baseline}" in result.feedback


def test_a_tight_budget_ends_the_rounds_by_budget(gpu_evaluator):
    task = get_task("matmul/matmul")
    options = EvalOptions(device="cuda", paired=PairedTiming(min_rounds=2, max_rounds=3, precision=1e-6))
    result = gpu_evaluator.evaluate(task, task.solution_source(), options)
    assert result.correct, result.feedback
    assert all(t.ended_by == "budget" and t.rounds == 3 for t in result.timing)
