"""Candidates honest in every checked call and not in timed ones, which they tell apart by their inputs
recurring (the timing loop rotates over a few staged sets; a checked call's inputs are drawn afresh).

On a GPU a sample of timed blocks is traced, and every timed call is held to the device time of its own
work when traced and when checked (tests/gpu/test_timed_trace_gpu.py rejects all of them). On the CPU
there are no timed calls in a verdict (no speedup to win), and what the worker's timed path does is watched
by the run-time policy: PyTorch computing in a timed call is a ``torch-op`` violation there. An answer kept
from an earlier call runs nothing the policy sees; only the device trace rejects that one.
"""

from __future__ import annotations

import pytest
from warpgym.env.judge import findings
from warpgym.env.judge.channel import ask, stage_inputs
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.plan import Check
from warpgym.env.protocol import messages as m
from warpgym.tasks import get_task

from .conftest import candidate_source, explain


def _loaded(evaluator, name: str, task_id: str = "math/add"):
    task = get_task(task_id)
    ev = evaluator.evaluation(task, candidate_source(name), EvalOptions(device="cpu"))
    assert ev.load(), explain(ev.result)
    return ev, task


def _checked_calls_pass(ev, task) -> None:
    for case in task.cases("dev"):
        if case.get("dtype") == "bfloat16":
            continue  # Triton's interpreter computes bf16 wrongly; the judge skips it on the CPU too
        for seed, dist in ((11, "normal"), (12, "uniform")):
            check = Check("dev", case, seed, dist)
            reply = ev.run(check)
            assert reply is not None and reply.ok and ev.judge(check, reply).passed, reply
    assert not ev.result.violations, explain(ev.result)


def test_pytorch_in_timed_calls_only_is_seen_by_the_run_time_policy_in_the_timed_path(cpu_evaluator):
    ev, task = _loaded(cpu_evaluator, "timed_torch_switch")
    _checked_calls_pass(ev, task)  # honest when checked: only the timed path can give it away
    staged = stage_inputs(ev, task.cases("dev")[1], [0, 1, 2], 120)
    assert staged.ok, staged.error
    reply = ask(ev.workers.run, m.TimeBlockRequest(calls=0, warmup_calls=6, release=True), 120)
    assert reply.ok and reply.forbidden_ops.get("add"), reply.forbidden_ops
    assert findings.timing_findings(ev, reply) and ev.result.correct is False
    (found,) = [v for v in ev.result.violations if v.code == "torch-op"]
    assert "during the timing loop" in found.message, found.message


def test_a_cached_answer_in_timed_calls_wins_nothing_on_the_cpu(cpu_evaluator):
    """Nothing on the CPU can see it (no kernel, no op: the cached tensor comes back as it is), and nothing
    there needs to: a CPU verdict has no timed calls and no speedup."""
    ev, task = _loaded(cpu_evaluator, "timed_cached_answer")
    _checked_calls_pass(ev, task)
    result = cpu_evaluator.evaluate(task, candidate_source("timed_cached_answer"), EvalOptions(device="cpu"))
    assert result.speedup is None and result.timing is None, explain(result)
    assert any(s.startswith("timing: no GPU") for s in result.skipped_checks), result.skipped_checks


@pytest.mark.parametrize(("name", "task_id"), [("timed_kept_answer_token_kernel", "math/add"),
                                               ("timed_kept_answer_copied", "matmul/matmul"),
                                               ("timed_short_tail", "math/add"),
                                               ("timed_repaired_tail", "math/add")])
def test_a_kept_answer_beside_a_launch_of_its_own_passes_every_checked_call(cpu_evaluator, name, task_id):
    """Right in every checked call, with the kernels the timed calls launch: only the device's time tells
    these from honest work (tests/gpu/test_timed_trace_gpu.py). The timed path runs under the policy
    without a finding too."""
    ev, task = _loaded(cpu_evaluator, name, task_id)
    _checked_calls_pass(ev, task)
    staged = stage_inputs(ev, task.cases("dev")[0], [0, 1, 2], 120)
    assert staged.ok, staged.error
    reply = ask(ev.workers.run, m.TimeBlockRequest(calls=0, warmup_calls=6, release=True), 120)
    assert reply.ok and not reply.forbidden_ops, reply.forbidden_ops
    assert not findings.timing_findings(ev, reply), explain(ev.result)
