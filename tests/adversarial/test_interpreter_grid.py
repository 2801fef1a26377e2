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


@pytest.mark.parametrize("names", [
    ["ptrs", "mask", "other", "cache_modifier", "eviction_policy", "is_volatile"],  # Triton 3.8
    ["ptrs", "mask", "other", "cache_policy", "is_volatile"],  # Triton 3.9
])
def test_a_volatile_load_is_read_as_one_in_either_triton_layout(names):
    """A spin-wait's volatile read orders what follows it. Which positional slot holds the flag differs
    between Triton versions, so it is read by name (3.9's layout read by position fails on 3.8)."""
    from warpgym.env.worker.interpreter_grid import load_arguments

    def call(volatile: bool) -> tuple:
        values = {"ptrs": "P", "mask": "M", "other": None, "cache_modifier": "",
                  "eviction_policy": "evict_last", "cache_policy": "", "is_volatile": volatile}
        return tuple(values[n] for n in names)

    assert load_arguments(names, call(True), {}) == ("P", "M", True)
    assert load_arguments(names, call(False), {}) == ("P", "M", False)
    assert load_arguments(names, ("P", "M"), {"is_volatile": True}) == ("P", "M", True)
