"""Every task that takes ``eps`` checks a case whose eps is not the one a kernel would hard-code (the
signature's default, or the dev cases' value): the reference solution with that constant in place of the
argument fails there, and the unmodified one passes."""

from __future__ import annotations

import ast
import dataclasses
import re

import pytest
from warpgym.env import EvalOptions
from warpgym.tasks import Sampler, all_tasks, get_task

EPS_TASKS = [t.id for t in all_tasks(suite="triton") if re.search(r"\beps: float\b", t.signature)]
HELDOUT = EvalOptions(device="cpu", shape_sets=("heldout",), timing=False)


def _usual_eps(task) -> float:
    """What a kernel would hard-code: the signature's default, else the first dev case's value."""
    default = re.search(r"\beps: float = ([0-9.e+-]+)", task.signature)
    if default:
        return float(default.group(1))
    return task.make_inputs(task.cases("dev")[0], Sampler(0, task.distributions[0], "meta"))["eps"]


def _eps_of(task, case) -> float:
    return task.make_inputs(case, Sampler(0, task.distributions[0], "meta"))["eps"]


def _with_constant_eps(source: str, entrypoint: str, eps: float) -> str:
    """The module with ``eps = <constant>`` as the entrypoint's first statement."""
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == entrypoint)
    lines = source.splitlines(keepends=True)
    first = fn.body[0]
    indent = " " * first.col_offset
    lines.insert(first.lineno - 1, f"{indent}eps = {eps!r}\n")
    return "".join(lines)


def _only_other_eps(task, eps: float):
    """The task reduced to its held-out cases whose eps differs from ``eps`` (fast on the CPU)."""
    cases = [c for c in task.cases("heldout") if _eps_of(task, c) != eps and c.get("dtype") != "bfloat16"]
    assert cases, f"{task.id}: no held-out case with an eps other than {eps}"
    return dataclasses.replace(task, shapes={**task.shapes, "heldout": cases})


def test_the_eps_tasks_are_found():
    assert len(EPS_TASKS) >= 20
    assert {"normalization/layer-norm", "fusion/add-rms-norm", "optimizer/adagrad"} <= set(EPS_TASKS)


@pytest.mark.parametrize("task_id", EPS_TASKS)
def test_a_kernel_with_a_constant_eps_fails_and_the_reference_passes(cpu_evaluator, task_id):
    task = get_task(task_id)
    eps = _usual_eps(task)
    reduced = _only_other_eps(task, eps)
    constant = _with_constant_eps(task.solution_source(), task.entrypoint, eps)
    assert constant != task.solution_source()
    result = cpu_evaluator.evaluate(reduced, constant, HELDOUT)
    assert result.compiled and result.correct is False, result.feedback
    # Wrong by its values (element-wise or norm-wise: the judge stops at the first failing check, and which
    # of the two fails first there depends on the evaluation's inputs), not by an error.
    assert any(c.passed is False and ("outside" in c.message or "relative L2" in c.message)
               for c in result.cases), result.feedback
    control = cpu_evaluator.evaluate(reduced, task.solution_source(), HELDOUT)
    assert control.correct is True, control.feedback
