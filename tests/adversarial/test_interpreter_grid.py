"""Out-of-bounds accesses the Triton interpreter's in-order launch would hide
(env/worker/interpreter_grid.py): caught on the CPU,
while a kernel whose programs are independent passes whatever the order."""

from __future__ import annotations

import pytest
from warpgym.env.worker.interpreter_grid import program_index

from .conftest import explain


@pytest.mark.parametrize("n", range(1, 10))
def test_every_program_runs_once(n):
    order = [program_index(i, n) for i in range(n)]
    assert sorted(order) == list(range(n))
    if n >= 2:
        assert order != sorted(order)  # not the in-order launch that hides a write into the next tile


def test_write_into_the_next_row_is_caught(judge):
    result = judge("normalization/softmax", "row_overrun_store")
    assert result.correct is False, explain(result)


def test_write_past_the_end_of_an_output_is_caught(judge):
    result = judge("math/add", "tail_overrun_store")
    assert result.correct is False, explain(result)
    messages = " ".join(c.message for c in result.cases if c.passed is False)
    # its loads share the mask, so the read past the end of x (inside the worker's guard) stops it first
    assert "out-of-bounds load" in messages or "out-of-bounds store" in messages, explain(result)


def test_independent_programs_in_any_order_pass(judge):
    result = judge("normalization/softmax", "softmax_rows_interleaved")
    assert result.correct is True, explain(result)
