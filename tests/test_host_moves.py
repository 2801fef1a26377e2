"""A task whose answer is data picked by indices limits the host copies and fills one call may make
(``Task.host_moves``): row-by-row copies at offsets read from the indices are the answer itself, with no
kernel. A wrapper's few (an output cleared, or copied from its base) pass."""

from __future__ import annotations

import torch
from warpgym.env.worker import policy
from warpgym.tasks import registry


def _moves_refused(found: dict[str, int]) -> bool:
    return any(key.startswith("host copies and fills beyond") for key in found)


def test_row_copies_beyond_the_limit_count_as_computing():
    weight, rows = torch.randn(10, 4), [3, 1, 4, 1, 5, 9, 2, 6]
    with policy.watching() as mode:
        out = torch.empty(len(rows), 4)
        for i, row in enumerate(rows):
            out[i].copy_(weight[row])
    assert _moves_refused(mode.forbidden(moves=4))
    assert not _moves_refused(mode.forbidden())  # a task that declares no limit


def test_an_op_given_out_fills_what_exists():
    with policy.watching() as mode:
        out = torch.zeros(6, 5, dtype=torch.int64)
        for i, label in enumerate([0, 4, 2, 2, 1, 3]):
            torch.ones((), dtype=torch.int64, out=out[i, label])
    assert _moves_refused(mode.forbidden(moves=4))


def test_a_wrapper_s_own_copies_pass_and_the_limit_holds_per_call():
    base = torch.randn(16, 8)
    with policy.watching() as mode:
        for _ in range(3):  # three calls of a timing block, each copying its base and clearing a scratch
            out = base.clone()
            torch.empty(4).zero_()
            del out
    assert not _moves_refused(mode.forbidden(moves=4, calls=3))
    assert _moves_refused(mode.forbidden(moves=4, calls=1))


def test_every_task_that_picks_data_by_indices_declares_a_limit():
    gathers = {"index/gather", "index/index-select", "index/embedding", "index/index-copy",
               "index/scatter-add", "index/masked-fill", "index/one-hot"}
    tasks = {task.id: task for task in registry.all_tasks()}
    assert gathers <= set(tasks)
    assert all(tasks[name].host_moves is not None for name in gathers)
    assert all(task.host_moves is None or not task.layout for task in tasks.values())
