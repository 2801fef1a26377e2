"""The red-team suite's fixtures: candidates are files in ``candidates/``, judged by the real Evaluator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, EvalResult, Evaluator
from warpgym.tasks import get_task

CANDIDATES = Path(__file__).parent / "candidates"
DEV = EvalOptions(device="cpu", shape_sets=("dev",))


def candidate_source(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


def explain(result: EvalResult) -> str:
    """Everything a failing assertion should show."""
    lines = [f"stage={result.stage} correct={result.correct}"]
    lines += [f"violation {v.code}: {v.message}" for v in result.violations]
    lines += [f"case {c.case} seed={c.seed}: {c.message}" for c in result.cases if c.passed is False][:5]
    lines += [f"compile: {e[:300]}" for e in result.compile_errors]
    return "\n".join(lines)


@pytest.fixture
def judge(cpu_evaluator: Evaluator) -> Callable[..., EvalResult]:
    """judge(task_id, candidate_name, options=DEV, evaluator=the session's CPU evaluator)."""

    def run(
        task_id: str, name: str, options: EvalOptions = DEV, evaluator: Evaluator | None = None
    ) -> EvalResult:
        return (evaluator or cpu_evaluator).evaluate(get_task(task_id), candidate_source(name), options)

    return run
