"""A run worker that dies between two calls of one evaluation (killed from outside while the judge
computes the next reference) must not be silently replaced by a fresh worker that holds no candidate,
whose calls then fail as if the candidate raised. A worker kept from earlier evaluations is replaced
and the candidate loaded again; a worker of the evaluation's own gets a verdict that says it died."""

from __future__ import annotations

import os
import signal

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.tasks import get_task

TASK = get_task("math/add")
OPTIONS = EvalOptions(device="cpu", shape_sets=("dev",))


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator("cpu") as ev:
        yield ev


def _kill_after_run(worker, nth: int) -> list[int]:
    """SIGKILL the worker right after it answers its ``nth`` run request, so it is dead while idle."""
    real, runs, killed = worker.request, [0], []

    def request(msg, timeout):
        reply = real(msg, timeout)
        if msg["op"] == "run":
            runs[0] += 1
            if runs[0] == nth:
                killed.append(worker.proc.pid)
                os.kill(worker.proc.pid, signal.SIGKILL)
                worker.proc.wait(10)
        return reply

    worker.request = request
    return killed


def test_a_kept_worker_killed_between_calls_is_replaced_and_the_candidate_loaded_again(evaluator):
    assert evaluator.evaluate(TASK, TASK.solution_source(), OPTIONS).correct  # the worker is now kept
    killed = _kill_after_run(evaluator.run_worker, nth=2)
    try:
        result = evaluator.evaluate(TASK, TASK.solution_source() + "\n# again\n", OPTIONS)
    finally:
        del evaluator.run_worker.request
    assert len(killed) == 1 and evaluator.run_worker.proc.pid != killed[0]
    assert result.correct, result.feedback
    assert not any("NoneType" in (c.message or "") for c in result.cases)


def test_a_worker_of_the_evaluations_own_killed_between_calls_is_a_verdict_that_says_so(evaluator):
    evaluator.run_worker.stop()  # the next evaluation starts its own worker: not kept from earlier
    killed = _kill_after_run(evaluator.run_worker, nth=2)
    try:
        result = evaluator.evaluate(TASK, TASK.solution_source() + "\n# own\n", OPTIONS)
    finally:
        del evaluator.run_worker.request
    assert len(killed) == 1
    assert result.correct is False
    assert "died between calls (killed by signal 9 (SIGKILL))" in result.feedback, result.feedback
    assert not any("NoneType" in (c.message or "") for c in result.cases)
    assert evaluator.evaluate(TASK, TASK.solution_source(), OPTIONS).correct  # and the evaluator goes on
