"""Properties every task of every suite must have: complete declarations, bindable
references and baselines, and no way to pass by returning zeros, ones or the input."""

from __future__ import annotations

import inspect
from collections import Counter

import pytest
import torch
from warpgym.env.judge.compare import compare_outputs
from warpgym.tasks import CATEGORIES, Sampler, all_tasks
from warpgym.tasks.spec import dtype_of, sequence

TASKS = all_tasks()
TRITON = [t for t in TASKS if t.suite == "triton"]


def test_the_triton_suite_covers_every_category():
    counts = Counter(t.category for t in TRITON)
    assert len(TRITON) >= 176
    assert set(counts) == set(CATEGORIES)
    assert all(n >= 4 for n in counts.values()), counts
    assert counts["fusion"] >= 40 and counts["fusion"] == max(counts.values())
    assert counts["quantization"] >= 8


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_task_declaration_is_complete(task):
    assert task.solution_path.is_file(), f"no reference solution at {task.solution_path}"
    statement = task.statement()
    assert task.signature in statement and len(task.description.strip()) > 40
    for name in ("dev", "heldout", "bench"):
        assert task.cases(name)
    assert not any(c in task.cases("dev") for c in task.cases("heldout")), "heldout must differ from dev"
    for dtype in task.dtypes:
        assert task.tolerance(dtype).why or task.tolerances.get(dtype) is None
    params = list(inspect.signature(_signature_fn(task)).parameters)
    for name in ("dev", "heldout", "bench"):
        for case in task.cases(name):
            flops, nbytes = task.flops(case), task.bytes(case)
            assert isinstance(flops, int) and isinstance(nbytes, int) and nbytes > 0 and flops >= 0
    inputs = task.make_inputs(task.cases("dev")[0], Sampler(0, task.distributions[0], "cpu"))
    assert list(inputs)[: len(params)] == params[: len(inputs)], "make_inputs keys follow the signature"
    inspect.signature(task.reference).bind(**inputs)
    if task.vendor is not None:
        inspect.signature(task.vendor).bind(**inputs)


def _signature_fn(task):
    namespace: dict = {"torch": torch}
    exec(task.signature + ": ...", namespace)  # noqa: S102 - our own declaration text
    return namespace[task.entrypoint]


def _trivial_answers(task):
    """Whether zeros, ones and the first input would pass each dev and heldout case."""
    passes = {"zeros": [], "ones": [], "first input": []}
    precision = dtype_of(task.reference_precision)
    for shape_set in ("dev", "heldout"):
        for case in task.cases(shape_set):
            inputs = task.make_inputs(case, Sampler(0, task.distributions[0], "cpu"))
            upcast = {k: v.to(precision) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                      for k, v in inputs.items()}
            expected = list(sequence(task.reference(**upcast)))
            meta = [o.to("meta") for o in sequence(task.reference(**inputs))]
            first = next(v for v in inputs.values() if isinstance(v, torch.Tensor))
            fakes = {
                "zeros": [torch.zeros(m.shape, dtype=m.dtype) for m in meta],
                "ones": [torch.ones(m.shape, dtype=m.dtype) for m in meta],
                "first input": [first.clone() if (first.shape, first.dtype) == (m.shape, m.dtype)
                                else torch.zeros(m.shape, dtype=m.dtype) for m in meta],
            }
            for name, fake in fakes.items():
                passes[name].append(compare_outputs(fake, expected, meta, task)["passed"])
    return passes


@pytest.mark.parametrize("task", [t for t in TASKS if t.check is None], ids=lambda t: t.id)
def test_no_task_is_passed_by_a_trivial_answer(task):
    for name, verdicts in _trivial_answers(task).items():
        assert not all(verdicts), f"returning {name} passes every dev and heldout case of {task.id}"


@pytest.mark.parametrize("task", [t for t in TASKS if t.check is not None], ids=lambda t: t.id)
def test_random_tasks_reject_a_constant(task):
    case = task.cases("dev")[0]
    inputs = task.make_inputs(case, Sampler(0, task.distributions[0], "cpu"))
    meta = [o.to("meta") for o in sequence(task.reference(**inputs))]
    for value in (0.0, 1.0):
        outputs = [torch.full(m.shape, value, dtype=m.dtype) for m in meta]
        problem = task.check(outputs[0] if len(outputs) == 1 else outputs, inputs, case)
        assert problem, f"a constant {value} passes {task.id}'s check"
