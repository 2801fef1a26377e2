"""Wrong kernels that a task's cases, input distributions or statistical checks once let through, each
rejected now by the case or check named in its docstring; and honest kernels in unusual styles for the
same tasks, which must keep passing. Candidates live in ``candidates/checks/``.

``shape_set`` is the one set the evaluation runs (the catching case lives there); ``case_key`` names a key
of the case that must fail (None: any case), ``words`` what its message must say.
"""

from __future__ import annotations

import dataclasses

import pytest
from warpgym.env import EvalOptions
from warpgym.tasks import get_task

from .conftest import CANDIDATES, candidate_source, explain

# candidate, task, shape set that catches it, key of the failing case (None: any), words of the message
WRONG = [
    ("dropout_seed_bit", "random/dropout", "dev", None, "identical outputs"),
    ("randint_even_only", "random/randint", "dev", None, "mod 2"),
    ("uniform_sixteen_values", "random/uniform", "dev", None, "Kolmogorov-Smirnov"),
    ("normal_eight_values", "random/normal", "dev", None, "Kolmogorov-Smirnov"),
    ("bernoulli_four_bit", "random/bernoulli", "dev", None, "the number of ones"),
    ("attention_no_max", "fusion/rope-attention", "heldout", "qk_scale", "outside"),
    ("argmax_tie_later_block", "reduce/argmax", "heldout", "grid", "outside atol=0"),
    ("max_pool_tie_later_tap", "pooling/max-pool2d-indices", "heldout", "grid", "outside atol=0"),
]

HONEST = [
    ("honest_dropout_int_threshold", "random/dropout"),
    ("honest_randint_mulhi", "random/randint"),
    ("honest_uniform_bits", "random/uniform"),
    ("honest_normal_box_muller", "random/normal"),
    ("honest_bernoulli_full_word", "random/bernoulli"),
    ("honest_attention_two_pass", "fusion/rope-attention"),
    ("honest_argmax_lanes", "reduce/argmax"),
]


@pytest.mark.parametrize(("name", "task_id", "shape_set", "case_key", "words"), WRONG,
                         ids=[row[0] for row in WRONG])
def test_a_wrong_kernel_fails_the_case_made_for_it(cpu_evaluator, name, task_id, shape_set, case_key, words):
    options = EvalOptions(device="cpu", shape_sets=(shape_set,), timing=False)
    task = get_task(task_id)
    if case_key is not None:
        # Only the case made for it: the other cases' inputs change with every evaluation's root, and may
        # catch the kernel first by chance (an fp16 tie in a window of plain N(0, 1) values).
        made_for_it = [c for c in task.shapes[shape_set] if case_key in c]
        task = dataclasses.replace(task, shapes={**task.shapes, shape_set: made_for_it})
    result = cpu_evaluator.evaluate(task, candidate_source(f"checks/{name}"), options)
    assert result.compiled and result.correct is False, explain(result)
    failed = [c for c in result.cases if c.passed is False]
    assert failed and not result.violations, explain(result)
    if case_key is not None:
        assert any(case_key in c.case for c in failed), explain(result)
    assert any(words in c.message for c in failed), explain(result)


@pytest.mark.parametrize(("name", "task_id"), HONEST, ids=[row[0] for row in HONEST])
def test_an_honest_kernel_in_an_unusual_style_passes(judge, name, task_id):
    options = EvalOptions(device="cpu", shape_sets=("dev", "heldout"), timing=False)
    result = judge(task_id, f"checks/{name}", options)
    assert result.correct is True and not result.violations, explain(result)


def test_every_candidate_here_has_a_test():
    on_disk = {p.stem for p in (CANDIDATES / "checks").glob("*.py")}
    assert on_disk == {row[0] for row in WRONG + HONEST}
