"""The attention tasks' float64 references take their scores a block of query rows at a time (a whole bench
score matrix, 32 GiB, does not fit an 80 GB card beside another evaluation): the answer must be the one the
whole matrix gives, for every task that computes attention eagerly, masks and biases included."""

from __future__ import annotations

import pytest
import torch
from warpgym.tasks import Sampler, all_tasks, get_task
from warpgym.tasks.triton import fusion


def _computes_attention_eagerly(reference) -> bool:
    code = getattr(reference, "__code__", None)
    return code is not None and "_eager_attention" in code.co_names


EAGER = sorted(t.id for t in all_tasks() if _computes_attention_eagerly(t.reference))


def test_the_eager_attention_tasks_are_found():
    assert {"fusion/attention-gqa", "fusion/attention-alibi"} <= set(EAGER) and len(EAGER) >= 6, EAGER


@pytest.mark.parametrize("task_id", EAGER)
def test_rows_at_a_time_give_the_whole_matrix_answer(task_id, monkeypatch):
    task = get_task(task_id)
    case = max(task.cases("dev"), key=task.flops)
    inputs = task.make_inputs(case, Sampler(0, "normal", "cpu"))
    wide = {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}
    whole = task.reference_of(case)(**wide)
    calls = []
    rows = fusion._attention_rows
    monkeypatch.setattr(fusion, "_attention_rows", lambda q, *a: calls.append(q.shape[-2]) or rows(q, *a))
    monkeypatch.setattr(fusion, "REFERENCE_SCORES_BYTES", 1)  # one query row a block
    blocked = task.reference_of(case)(**wide)
    assert len(calls) > 1 and set(calls) == {1}, calls
    for a, b in zip(torch.utils._pytree.tree_leaves(whole), torch.utils._pytree.tree_leaves(blocked),
                    strict=True):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12)


def test_other_dtypes_stay_one_call(monkeypatch):
    """The eager baseline runs the reference in the inputs' dtype and is timed: no blocks there."""
    calls = []
    rows = fusion._attention_rows
    monkeypatch.setattr(fusion, "_attention_rows", lambda q, *a: calls.append(q.shape[-2]) or rows(q, *a))
    monkeypatch.setattr(fusion, "REFERENCE_SCORES_BYTES", 1)
    q = torch.randn(1, 2, 64, 32, dtype=torch.float32)
    fusion._eager_attention(q, q, q)
    assert calls == [64]
