"""Random tasks: what a constant, seed-blind, badly offset or wrong-rate kernel returns is rejected.

The checks are tested directly on crafted outputs (fast, no kernel), and end to end through the CPU
evaluator on small variants of the reference solutions (a seed replaced by a constant, a wrong keep
rate, a missing rescale), with the unmodified reference as the positive control.
"""

from __future__ import annotations

import re

import pytest
import torch
from warpgym.env import EvalOptions
from warpgym.tasks import Sampler, all_tasks, get_task

RANDOM = [t.id for t in all_tasks(category="random")]
DEV = EvalOptions(device="cpu", shape_sets=("dev",), timing=False)
SEED_CALL = re.compile(r"tl\.(rand|randn|randint)\(seed,")


def _case_and_inputs(task_id: str, seed: int = 0):
    task = get_task(task_id)
    case = next(c for c in task.cases("dev") if c.get("dtype") != "bfloat16")
    inputs = task.make_inputs(case, Sampler(seed, task.distributions[0], "cpu"))
    want = task.reference(**inputs)
    return task, case, inputs, want


def test_the_random_suite_is_complete():
    assert len(RANDOM) >= 6
    for task_id in RANDOM:
        task = get_task(task_id)
        assert task.check is not None, task_id
        assert len(set(task.seeds)) >= 2 and task.distributions == ("normal",), task_id
        assert "seed" in task.signature, task_id
        assert SEED_CALL.search(task.solution_source()), f"{task_id}: the solution draws no seeded numbers"


@pytest.mark.parametrize("task_id", RANDOM)
@pytest.mark.parametrize("value", [0.0, 1.0, 0.5, 3.0])
def test_a_constant_output_is_rejected(task_id, value):
    task, case, inputs, want = _case_and_inputs(task_id)
    constant = torch.full(want.shape, value).to(want.dtype)
    assert task.check(constant, inputs, case) is not None


@pytest.mark.parametrize("task_id", RANDOM)
def test_returning_the_input_or_a_wrong_shape_is_rejected(task_id):
    task, case, inputs, want = _case_and_inputs(task_id)
    first = next(v for v in inputs.values() if isinstance(v, torch.Tensor))
    assert task.check(first.clone(), inputs, case) is not None
    assert task.check(torch.zeros(want.numel() + 1, dtype=want.dtype), inputs, case) is not None


@pytest.mark.parametrize("task_id", RANDOM)
def test_the_inputs_other_than_seed_do_not_depend_on_the_seed(task_id):
    """Otherwise a kernel that ignores `seed` would still give other outputs under another seed."""
    _, _, a, _ = _case_and_inputs(task_id, seed=0)
    _, _, b, _ = _case_and_inputs(task_id, seed=1)
    assert a["seed"] != b["seed"]
    for name, value in a.items():
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(value, b[name], rtol=0, atol=0, equal_nan=True, msg=name)


def _dropout_like(x: torch.Tensor, p: float, u: torch.Tensor) -> torch.Tensor:
    return torch.where(u >= p, (x.double() / (1 - p)).to(x.dtype), torch.zeros((), dtype=x.dtype))


def test_the_dropout_check_accepts_a_good_draw_and_rejects_wrong_rates_and_scales():
    task, case, inputs, _ = _case_and_inputs("random/dropout")
    x, p = inputs["x"], inputs["p"]
    g = torch.Generator().manual_seed(7)
    u = torch.rand(x.shape, generator=g)
    assert task.check(_dropout_like(x, p, u), inputs, case) is None
    assert "kept" in task.check(_dropout_like(x, p * 0.8, u), inputs, case)  # keep rate off by 2 points
    assert "kept" in task.check(_dropout_like(x, 1 - p, u), inputs, case)  # p and 1 - p swapped
    unscaled = torch.where(u >= p, x, torch.zeros((), dtype=x.dtype))
    assert task.check(unscaled, inputs, case) is not None


def test_the_dropout_check_rejects_masks_that_repeat():
    task, case, inputs, _ = _case_and_inputs("random/dropout")
    x, p = inputs["x"], inputs["p"]
    g = torch.Generator().manual_seed(7)
    per_column = torch.rand(x.shape[1], generator=g).expand_as(x)  # offsets forgot the row
    assert "apart" in task.check(_dropout_like(x, p, per_column), inputs, case)
    per_block = torch.rand(1024, generator=g).repeat(x.numel() // 1024 + 1)[: x.numel()].view_as(x)
    assert "apart" in task.check(_dropout_like(x, p, per_block), inputs, case)  # offsets restart per program


def test_the_uniform_and_normal_checks_reject_a_wrong_distribution():
    task, case, inputs, _ = _case_and_inputs("random/uniform")
    g = torch.Generator().manual_seed(3)
    low, high = inputs["low"], inputs["high"]
    good = (low + (high - low) * torch.rand(inputs["x"].shape, generator=g)).to(inputs["x"].dtype)
    assert task.check(good, inputs, case) is None
    squeezed = (low + (high - low) * torch.rand(inputs["x"].shape, generator=g) ** 1.1).to(inputs["x"].dtype)
    assert task.check(squeezed, inputs, case) is not None
    task, case, inputs, _ = _case_and_inputs("random/normal")
    z = torch.randn(inputs["x"].shape, generator=g)
    mean, std = inputs["mean"], inputs["std"]
    assert task.check((mean + std * z).to(inputs["x"].dtype), inputs, case) is None
    assert task.check((mean + 1.05 * std * z).to(inputs["x"].dtype), inputs, case) is not None
    uniform = (torch.rand(inputs["x"].shape, generator=g) - 0.5) * 12**0.5  # mean 0, variance 1, not normal
    assert "within" in task.check((mean + std * uniform).to(inputs["x"].dtype), inputs, case)


def test_the_stochastic_round_check_rejects_round_to_nearest():
    task, case, inputs, _ = _case_and_inputs("random/stochastic-round")
    x, scale = inputs["x"], inputs["scale"]
    assert task.check(torch.round(x / scale) * scale, inputs, case) is not None
    assert task.check(torch.floor(x / scale) * scale, inputs, case) is not None


# ----------------------------------------------------------------------------------- end to end
def _variant(task_id: str, old: str | re.Pattern[str], new: str) -> str:
    source = get_task(task_id).solution_source()
    changed = old.sub(new, source) if isinstance(old, re.Pattern) else source.replace(old, new)
    assert changed != source, f"{task_id}: the variant changed nothing"
    return changed


def test_the_reference_dropout_passes_end_to_end(cpu_evaluator):
    task = get_task("random/dropout")
    result = cpu_evaluator.evaluate(task, task.solution_source(), DEV)
    assert result.correct, result.feedback
    assert sum(1 for c in result.cases if c.passed) >= 4  # two seeds for each runnable dev case


@pytest.mark.parametrize("task_id", RANDOM)
def test_a_kernel_that_ignores_the_seed_is_rejected(cpu_evaluator, task_id):
    source = _variant(task_id, SEED_CALL, r"tl.\1(12345,")
    result = cpu_evaluator.evaluate(get_task(task_id), source, DEV)
    assert result.compiled and result.correct is False
    assert any("identical" in c.message for c in result.cases), result.feedback


@pytest.mark.parametrize("label, old, new", [
    ("wrong keep rate", "keep = tl.rand(seed, offs) >= p", "keep = tl.rand(seed, offs) >= p * 0.8"),
    ("no rescale", "tl.where(keep, x * scale, 0.0)", "tl.where(keep, x, 0.0)"),
    ("constant output", "tl.where(keep, x * scale, 0.0)", "(x * 0.0 + keep.to(tl.float32) * 0.0)"),
])
def test_a_wrong_dropout_kernel_is_rejected(cpu_evaluator, label, old, new):
    result = cpu_evaluator.evaluate(get_task("random/dropout"), _variant("random/dropout", old, new), DEV)
    assert result.compiled and result.correct is False, label
    assert any(c.passed is False and c.message for c in result.cases), result.feedback


def test_a_placeholder_reference_is_never_timed_as_a_baseline():
    # random tasks' references only allocate (the check judges them); timing one gave 0.00x speedups.
    from warpgym.env.judge.baselines import Baselines, callables
    from warpgym.tasks import get_task
    from warpgym.tasks.registry import all_tasks

    judged_by_check = [t for t in all_tasks() if t.check is not None]
    assert len(judged_by_check) == 7
    for task in judged_by_check:
        assert callables(task) == {}
        sides = Baselines(task, task.cases("dev")[0], "cpu", alone=True, out_of_memory=RuntimeError)
        sides.prepare()
        assert sides.sides() == {} and sides.inputs == [], "no baseline, and no inputs built for one"
    add = get_task("math/add")
    assert set(callables(add)) == {"eager", "torch.compile"}
