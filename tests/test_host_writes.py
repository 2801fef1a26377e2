"""The CPU worker's memory watch on its own (env/worker/host_writes.py): fresh allocations hold the poison,
PyTorch's fills and copies are trusted, and bytes the host writes through a raw pointer are found at the
next use. Kernel launches are covered end to end in tests/adversarial/test_host_memory.py."""

from __future__ import annotations

import numpy as np
import torch
from warpgym.env.worker.host_writes import HostWrites
from warpgym.env.worker.interpreter_races import raw_bytes


def _scribble(t: torch.Tensor, value: float = 1.5) -> None:
    """Write through the tensor's memory as NumPy would, with no tensor method."""
    memory = raw_bytes(t.data_ptr(), t.numel() * t.element_size()).view(np.float32)
    memory[:] = value


def test_allocations_that_ask_for_no_values_hold_the_poison_and_fills_hold_theirs():
    with HostWrites() as watch:
        fresh = [torch.empty(1 << 16), torch.empty_like(torch.ones(7)), torch.ones(3).new_empty(5),
                 torch.empty_strided((4, 4), (1, 4)), torch.empty(9, dtype=torch.int64)]
        zeros, full = torch.zeros(1 << 16), torch.full((5,), 2.5)
    assert all(torch.isnan(t).all() for t in fresh[:4]) and bool((fresh[4] == -1).all())
    assert bool((zeros == 0).all()) and bool((full == 2.5).all())
    assert watch.findings == []


def test_pytorch_writes_and_views_are_trusted():
    with HostWrites() as watch:
        out = torch.empty(64)
        out.fill_(0.0)
        out[8:16].copy_(torch.arange(8.0))
        out.view(8, 8)[2].zero_()
        twin = out.clone()
        watch.check_outputs([out, twin])
    assert watch.findings == []


def test_a_raw_write_is_found_at_the_next_op_that_reads_the_tensor():
    with HostWrites() as watch:
        scratch = torch.empty(256)
        _scribble(scratch)
        out = torch.empty(256)
        out.copy_(scratch)  # laundering the host's answer through an allowed copy
    assert len(watch.findings) == 1 and "before the PyTorch op copy_" in watch.findings[0]
    assert "1024 byte(s) of a 1024-byte tensor" in watch.findings[0]


def test_a_raw_write_into_a_returned_output_is_found():
    with HostWrites() as watch:
        out = torch.zeros(100)
        _scribble(out[:10])
        watch.check_outputs([out])
    assert len(watch.findings) == 1 and "when the entrypoint returned (output 0)" in watch.findings[0]


def test_memory_reallocated_by_no_op_the_watch_saw_is_found_and_a_watched_resize_is_not():
    """An op unseen by the watch (a thread or switch the policy missed) can resize an output, so that its
    record no longer matches; its new contents are nobody's the watch knows."""
    with HostWrites() as watch:
        out = torch.zeros(256)
        out.resize_(512)
        out.resize_(256)
        out.fill_(1.0)
        watch.check_outputs([out])
    assert watch.findings == []
    with HostWrites() as watch:
        out = torch.zeros(256)
    out.resize_(512)  # outside the watch
    out.resize_(256)
    out.fill_(1.0)
    watch.check_outputs([out])
    assert len(watch.findings) == 1 and "reallocated (resized from 1024 to 2048 bytes" in watch.findings[0]


def test_memory_no_pytorch_op_allocated_is_a_host_answer_unless_small():
    with HostWrites() as watch:
        small = torch.from_numpy(np.ones(64, dtype=np.float32))
        big = torch.from_numpy(np.ones(1 << 14, dtype=np.float32))
        small.clone()
        big.clone()
    assert len(watch.findings) == 1 and "no PyTorch op allocated" in watch.findings[0]


def test_small_tables_of_unknown_memory_count_together():
    """Sixteen 1 KiB chunks of host-made memory are one 16 KiB answer, not sixteen small tables."""
    with HostWrites() as watch:
        for _ in range(7):
            torch.from_numpy(np.ones(256, dtype=np.float32)).clone()
    assert not watch.findings  # 7 KiB: a table
    with HostWrites() as watch:
        for _ in range(16):
            torch.from_numpy(np.ones(256, dtype=np.float32)).clone()
    assert watch.findings and "16384 bytes" in watch.findings[-1], watch.findings


def test_outside_a_call_nothing_is_reported_but_memory_is_remembered():
    with HostWrites(strict=False) as loading:
        table = torch.empty(4096)
        table.fill_(3.0)
        _scribble(table)
        table.clone()
    assert loading.findings == []
    with HostWrites() as call:
        table.clone()  # what the import left is trusted as it was at its last use
        _scribble(table, 2.0)
        table.clone()
    assert len(call.findings) == 1


def test_fresh_poison_fills_what_asks_for_no_values_and_leaves_what_asks_for_values():
    """What a GPU worker's checked calls run under (there on the device; the rule is the same here)."""
    from warpgym.env.worker.host_writes import FreshPoison

    with FreshPoison():
        empty = torch.empty(1000)
        like = torch.empty_like(empty, dtype=torch.int32)
        strided = torch.empty_strided((4, 4), (8, 1))
        zeros = torch.zeros(3)
        full = torch.full((3,), 2.0)
    assert torch.isnan(empty).all() and (like == -1).all() and torch.isnan(strided).all()
    assert (zeros == 0).all() and (full == 2).all()


def test_bytes_a_resize_adds_hold_the_poison_and_the_bytes_it_keeps_hold_their_values():
    """Grown from nothing, a storage would hold the OS's zero pages: an accumulator assumed to start at zero
    (``torch.empty(0).resize_(n)`` under atomics) would pass by chance, as with an unpoisoned allocation."""
    from warpgym.env.worker.host_writes import FreshPoison

    with HostWrites() as watch:
        grown = torch.empty(0).resize_(1 << 16)
        kept = torch.arange(4.0)
        kept.resize_(1 << 14)
        watch.check_outputs([grown, kept])
    assert torch.isnan(grown).all() and torch.isnan(kept[4:]).all()
    assert kept[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert watch.findings == []
    with FreshPoison():
        grown = torch.empty(0).resize_(1 << 16)
    assert torch.isnan(grown).all()
