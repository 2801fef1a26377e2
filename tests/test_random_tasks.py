"""Random tasks: what a constant, seed-blind, badly offset or wrong-rate kernel returns is rejected.

The checks are tested directly on crafted outputs (fast, no kernel), and end to end through the CPU
evaluator on small variants of the reference solutions (a seed replaced by a constant, a wrong keep
rate, a missing rescale), with the unmodified reference as the positive control.
"""

from __future__ import annotations

import itertools
import math
import re

import pytest
import torch
from warpgym.env import EvalOptions
from warpgym.tasks import Sampler, all_tasks, get_task

RANDOM = [t.id for t in all_tasks(category="random")]
DEV = EvalOptions(device="cpu", shape_sets=("dev",), timing=False)
SEED_CALL = re.compile(r"tl\.(rand|randn|randint)\(seed,")


def _case_and_inputs(task_id: str, seed: int = 0, pick=lambda case: True):
    task = get_task(task_id)
    case = next(c for c in task.cases("dev") if c.get("dtype") != "bfloat16" and pick(c))
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


def _uniform01(shape, seed: int = 5) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _levels(u: torch.Tensor, count: int) -> torch.Tensor:
    """u rounded to the centres of ``count`` equal bins: a generator of log2(count) random bits."""
    return (torch.floor(u * count) + 0.5) / count


def test_a_uniform_of_few_random_bits_is_rejected():
    task, case, inputs, _ = _case_and_inputs("random/uniform")
    low, high, x = inputs["low"], inputs["high"], inputs["x"]
    u = _uniform01(x.shape)

    def fill(v):
        return (low + (high - low) * v).to(x.dtype)

    assert task.check(fill(u), inputs, case) is None
    assert task.check(fill(_levels(u, 1 << 22)), inputs, case) is None  # 22 bits: finer than the check sees
    assert "Kolmogorov" in task.check(fill(_levels(u, 16)), inputs, case)  # passes 16 equal bins exactly
    assert "repeat" in task.check(fill(_levels(u, 1 << 12)), inputs, case)  # passes the distance test


def test_a_normal_of_few_values_is_rejected():
    task, case, inputs, _ = _case_and_inputs("random/normal")
    mean, std, x = inputs["mean"], inputs["std"], inputs["x"]
    u = _uniform01(x.shape)

    def fill(z):
        return (mean + std * z).to(x.dtype)

    assert task.check(fill(torch.special.ndtri(u)), inputs, case) is None
    # Eight values with the moments and the within-k-std fractions of N(0, 1).
    p1, p2, p3 = (math.erf(k / math.sqrt(2)) for k in (1, 2, 3))
    b, c, d = 1.4, 2.3, 3.2
    a = math.sqrt((1 - (p2 - p1) * b * b - (p3 - p2) * c * c - (1 - p3) * d * d) / p1)
    v = (2 * u) % 1.0
    mag = torch.where(v < p1, a, torch.where(v < p2, b, torch.where(v < p3, c, d)))
    eight = torch.where(u < 0.5, -mag, mag)
    assert task.check(fill(eight), inputs, case).startswith("the values do not follow")
    assert "repeat" in task.check(fill(torch.special.ndtri(_levels(u, 1 << 16))), inputs, case)


def test_a_bernoulli_against_a_four_bit_number_is_rejected():
    task, case, inputs, _ = _case_and_inputs("random/bernoulli")
    p = inputs["probs"]
    u = _uniform01(p.shape)
    assert task.check((u < p.double()).to(p.dtype), inputs, case) is None
    assert task.check((_levels(u, 16) < p.double()).to(p.dtype), inputs, case) is not None
    never = (u < p.double()) & (p != float(torch.tensor(0.02, dtype=p.dtype)))  # p = 0.02 never fires
    assert "probability 0.02" in task.check(never.to(p.dtype), inputs, case)


def test_a_stochastic_round_with_a_four_bit_number_is_rejected():
    task, case, inputs, _ = _case_and_inputs("random/stochastic-round")
    x, scale = inputs["x"], inputs["scale"]
    u = _uniform01(x.shape)
    t = x.double() / scale
    assert task.check((torch.floor(t + u) * scale).float(), inputs, case) is None
    assert task.check((torch.floor(t + _levels(u, 16)) * scale).float(), inputs, case) is not None


def test_a_randint_that_misses_values_is_rejected():
    task, case, inputs, _ = _case_and_inputs("random/randint", pick=lambda c: c["high"] - c["low"] > 1000)
    low, span, shape = inputs["low"], inputs["high"] - inputs["low"], inputs["x"].shape
    r = torch.randint(0, 2**32, shape, generator=torch.Generator().manual_seed(5))
    assert task.check(low + r % span, inputs, case) is None
    assert "mod 2" in task.check(low + 2 * (r % (span // 2)), inputs, case)  # even offsets only
    assert "mod 3" in task.check(low + 3 * (r % (span // 3)), inputs, case)
    assert "repeat" in task.check(low + ((r >> 24) * span >> 8), inputs, case)  # 8 random bits: 256 values


SEED_KEYINGS = {
    "its lowest bit": lambda s: s & 1,
    "its low 8 bits": lambda s: s & 0xFF,
    "its low 16 bits": lambda s: s & 0xFFFF,
    "seed >> 1": lambda s: s >> 1,
    "seed >> 8": lambda s: s >> 8,
    "a float32 copy": lambda s: float(torch.tensor(s, dtype=torch.float32)),
}


@pytest.mark.parametrize("task_id", RANDOM)
def test_the_seeds_of_a_case_differ_in_single_bits(task_id):
    """The evaluator compares every pair of a case's seeds: a generator keyed on part of the seed gives two
    of them one output, in a dev case the CPU runs."""
    task = get_task(task_id)
    runnable = [c for c in task.cases("dev") if c.get("dtype") != "bfloat16"]
    per_case = [[task.make_inputs(c, Sampler(j, "normal", "meta"))["seed"] for j in task.seeds]
                for c in runnable]
    for seeds in per_case:
        assert len(set(seeds)) == len(seeds) == 4 and all(1 <= s < 2**31 for s in seeds)
        assert all(bin(a ^ b).count("1") <= 2 for a, b in itertools.combinations(seeds, 2))
    for name, key in SEED_KEYINGS.items():
        assert any(key(a) == key(b) for seeds in per_case for a, b in itertools.combinations(seeds, 2)), name


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
