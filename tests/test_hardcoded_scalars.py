"""A kernel that hard-codes a scalar argument at its dev value fails the held-out cases under any inputs.

Inputs come from a fresh root in every evaluation, so "the held-out cases catch it" must hold for every
draw, not for the one a test happened to make: a held-out eps that matters only where a draw puts a second
moment near zero let such a kernel pass one evaluation in four. So each draw must catch it by a margin, not
by the one element a lucky draw puts there. The wrong kernel here is the reference itself computed exactly
with the dev value in place of the argument (a real kernel adds rounding of its own, which only makes it
fail more), judged by the judge's own comparison over several draws.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from warpgym.env.judge.compare import compare_outputs
from warpgym.env.judge.references import References
from warpgym.tasks import Sampler, all_tasks, get_task
from warpgym.tasks.spec import dtype_of, sequence

DRAWS = 4
MARGIN_ELEMENTS = 16
MARGIN_L2 = 3.0
ENUMERATED = {
    ("pooling/lp-pool2d", "norm_type"): "the statement allows 2.0 or 4.0",
    **{(f"quantization/{name}", "group_size"): "the statement allows 32, 64 or 128"
       for name in ("dequantize-per-group", "int4-dequantize", "int4-quantize-pack",
                    "quantize-dynamic-per-group", "quantize-per-group", "w4a16-gemm")},
}
"""Scalars whose every allowed value a dev case shows: the held-out cases cannot hold another."""


def _scalars(task: Any, case: dict[str, Any]) -> dict[str, Any]:
    inputs = task.make_inputs(case, Sampler(0, task.distributions[0], "meta"))
    return {k: v for k, v in inputs.items() if isinstance(v, (bool, int, float))}


def _cases(task: Any, shape_set: str) -> list[dict[str, Any]]:
    """The cases the CPU judge runs (the interpreter does not run bfloat16)."""
    return [c for c in task.cases(shape_set) if c.get("dtype") != "bfloat16"]


def _hardcodable() -> list[tuple[str, str]]:
    pairs = []
    for task in all_tasks(suite="triton"):
        if task.check is not None:
            continue
        usual = _scalars(task, task.cases("dev")[0])
        held = [_scalars(task, c) for c in _cases(task, "heldout")]
        pairs += [(task.id, key) for key, value in usual.items()
                  if any(h.get(key, value) != value for h in held)]
    return pairs


def _caught(task: Any, case: dict[str, Any], key: str, value: Any, seed: int, dist: str) -> bool:
    """Whether the reference with ``key=value`` fails the judge's comparison on this draw by a margin: at
    least MARGIN_ELEMENTS elements outside the tolerance, or a norm-wise error MARGIN_L2 times its bound,
    or an answer of another shape. A miss by one element is luck, and the next draw may not have it."""
    expected, meta = References("cpu").get(task, case, seed, dist)
    inputs = task.make_inputs(case, Sampler(seed, dist, "cpu"))
    precision = dtype_of(task.reference_precision)
    inputs = {k: v.to(precision) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
              for k, v in {**inputs, key: value}.items()}
    try:
        with torch.no_grad():
            wrong = list(sequence(task.reference_of(case)(**inputs)))
        wrong = [w.to(m.dtype) if isinstance(w, torch.Tensor) else w
                 for w, m in zip(wrong, meta, strict=True)]
        found = compare_outputs(wrong, expected, meta, task)
    except (RuntimeError, ValueError, IndexError):
        return True  # no kernel can compute the case with that value: it fails
    if found["passed"]:
        return False
    bound = max(task.tolerance(str(m.dtype).removeprefix("torch.")).rel_l2 for m in meta
                if isinstance(m, torch.Tensor))
    return ("mismatches" not in found or found["mismatches"] >= MARGIN_ELEMENTS
            or not found["rel_l2_error"] < MARGIN_L2 * bound)


@pytest.mark.parametrize(("task_id", "key"), _hardcodable())
def test_a_kernel_with_the_dev_value_fails_every_draw(task_id, key):
    task = get_task(task_id)
    usual = _scalars(task, task.cases("dev")[0])[key]
    held = [c for c in _cases(task, "heldout") if _scalars(task, c).get(key, usual) != usual]
    rng = random.Random(f"{task_id}:{key}")
    for draw in range(DRAWS):
        seeds = [rng.randrange(1 << 30) for _ in task.seeds]
        assert any(_caught(task, case, key, usual, seed, dist)
                   for case in held for dist in task.distributions for seed in seeds), (
            f"{task_id}: {key}={usual!r} (the first dev case's) passes every held-out case on draw {draw}")
    own = _scalars(task, held[0])[key]
    assert not _caught(task, held[0], key, own, seeds[0], task.distributions[0]), "the check cannot pass"


def test_every_scalar_has_a_held_out_value_no_dev_case_shows():
    """A kernel written for the dev cases' values only (``if stride == 1: ... else: stride 2``) fails."""
    unseen = []
    for task in all_tasks(suite="triton"):
        if task.check is not None:
            continue
        dev = [_scalars(task, c) for c in task.cases("dev")]
        held = [_scalars(task, c) for c in task.cases("heldout")]
        for key in set().union(*dev):
            if isinstance(dev[0][key], bool) or (task.id, key) in ENUMERATED:
                continue
            if {h.get(key) for h in held} <= {d.get(key) for d in dev}:
                unseen.append(f"{task.id}: {key}")
    assert not unseen, unseen
