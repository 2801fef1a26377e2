"""Data races the Triton interpreter's one-program-at-a-time launch hides (env/worker/interpreter_races.py):
the tracker's rules on their own, then candidates judged end to end on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from warpgym.env.worker.interpreter_races import Access, LaunchRaces, Race

from .conftest import explain


def _access(races: LaunchRaces, offsets: list[int], shape: tuple[int, ...] | None = None,
            values: list[int] | None = None, key: int = 0) -> Access:
    flat = np.arange(len(offsets))
    lanes = races.lane_codes(shape or (len(offsets),), flat)
    data = None if values is None else np.asarray(values, dtype=np.uint32).view(np.uint8).reshape(-1, 4)
    return Access(key, 0, 64, np.asarray(offsets, dtype=np.int64), 4, lanes, data)


def _launch(programs: int = 4) -> LaunchRaces:
    races = LaunchRaces("kernel")
    races.grid = (programs, 1, 1)
    return races


def test_a_load_of_another_programs_store_is_a_race():
    races = _launch()
    races.start_program(1, 0, 0)
    races.store(_access(races, [0]))
    races.start_program(0, 0, 0)
    words = r"kernel kernel: program \(0, 0, 0\) loaded byte 0 .* program \(1, 0, 0\)"
    with pytest.raises(Race, match=words):
        races.load(_access(races, [0]))


def test_a_programs_own_store_and_other_addresses_are_fine():
    races = _launch()
    races.start_program(1, 0, 0)
    races.store(_access(races, [0, 4]))
    races.load(_access(races, [0, 4]))  # its own, same elements
    races.start_program(0, 0, 0)
    races.load(_access(races, [8, 12]))  # nobody stored there
    races.store(_access(races, [8, 12]))


def test_storing_over_another_programs_value_races_unless_the_bytes_are_the_same():
    races = _launch()
    memory = np.zeros(16, dtype=np.uint32)
    base = memory.ctypes.data
    first = _access(races, [0, 4], values=[7, 8])
    first.base = base
    races.start_program(1, 0, 0)
    races.store(first)
    memory[:2] = [7, 8]  # what the interpreter's store then writes
    races.start_program(0, 0, 0)
    same = _access(races, [0, 4], values=[7, 8])
    same.base = base
    races.store(same)  # an overlapping tile writing the same sums
    different = _access(races, [0, 4], values=[7, 9])
    different.base = base
    races.start_program(2, 0, 0)
    with pytest.raises(Race, match="stored to byte 4"):
        races.store(different)


def test_atomics_never_race_with_atomics_but_do_with_plain_accesses():
    races = _launch()
    races.start_program(1, 0, 0)
    races.atomic([_access(races, [0])], acquire=False, release=False, writes=True)
    races.start_program(0, 0, 0)
    races.atomic([_access(races, [0])], acquire=False, release=False, writes=True)
    races.start_program(2, 0, 0)
    with pytest.raises(Race, match="loaded byte 0"):
        races.load(_access(races, [0]))


def test_a_release_then_an_acquire_on_the_same_tensor_orders_the_stores_before():
    races = _launch()
    races.start_program(1, 0, 0)
    races.store(_access(races, [0], key=1))
    races.atomic([_access(races, [0], key=2)], acquire=True, release=True, writes=True)  # take a ticket
    races.start_program(0, 0, 0)
    races.atomic([_access(races, [0], key=2)], acquire=True, release=True, writes=True)
    races.load(_access(races, [0], key=1))  # the last program reads the partial


def test_relaxed_atomics_or_another_tensor_do_not_synchronise():
    for acquire_key, release in ((2, False), (3, True)):
        races = _launch()
        races.start_program(1, 0, 0)
        races.store(_access(races, [0], key=1))
        races.atomic([_access(races, [0], key=2)], acquire=True, release=release, writes=True)
        races.start_program(0, 0, 0)
        races.atomic([_access(races, [0], key=acquire_key)], acquire=True, release=True, writes=True)
        with pytest.raises(Race):
            races.load(_access(races, [0], key=1))


def test_stores_after_the_release_are_not_published():
    races = _launch()
    races.start_program(1, 0, 0)
    races.atomic([_access(races, [0], key=2)], acquire=True, release=True, writes=True)
    races.store(_access(races, [0], key=1))
    races.start_program(0, 0, 0)
    races.atomic([_access(races, [0], key=2)], acquire=True, release=True, writes=True)
    with pytest.raises(Race):
        races.load(_access(races, [0], key=1))


def test_lanes_exchanging_data_need_a_barrier():
    races = _launch(1)
    races.start_program(0, 0, 0)
    races.store(_access(races, [0, 4, 8, 12]))
    races.load(_access(races, [0, 4, 8, 12]))  # each element reads back its own
    with pytest.raises(Race, match="element 0 of a load reads byte 12 .* element 3 of an earlier store"):
        races.load(_access(races, [12, 0, 4, 8]))
    races.barrier()
    races.load(_access(races, [12, 0, 4, 8]))


def test_the_same_position_in_another_block_shape_is_another_thread():
    races = _launch(1)
    races.start_program(0, 0, 0)
    races.store(_access(races, [0, 4, 8, 12], shape=(4,)))
    races.load(_access(races, [0, 4, 8, 12], shape=(1, 4)))  # size-1 axes change nothing
    with pytest.raises(Race):
        races.load(_access(races, [0, 4, 8, 12], shape=(2, 2)))


def test_a_narrower_access_refines_the_shadow():
    races = _launch()
    races.start_program(1, 0, 0)
    races.store(_access(races, [0, 4]))
    races.start_program(0, 0, 0)
    narrow = Access(0, 0, 64, np.asarray([2], dtype=np.int64), 2, races.lane_codes((1,), np.arange(1)))
    with pytest.raises(Race, match="byte 2"):
        races.load(narrow)


RACY = [
    ("race_rmw_sum", "reduce/sum-all", "rmw_kernel", "same time and in no fixed order"),
    ("race_intra_program_scan", "reduce/cumsum", "scan_kernel", "tl.debug_barrier()"),
]
HONEST = [
    ("honest_sum_atomic_zeroed", "reduce/sum-all"),
    ("honest_sum_last_program", "reduce/sum-all"),
    ("honest_sum_spin_lock", "reduce/sum-all"),
    ("honest_cumsum_assoc_scan", "reduce/cumsum"),
    ("honest_add_overlapping_tail", "math/add"),
]


@pytest.mark.parametrize(("name", "task_id", "kernel", "words"), RACY, ids=[r[0] for r in RACY])
def test_racy_kernels_are_rejected_naming_the_kernel(judge, name, task_id, kernel, words):
    result = judge(task_id, name)
    assert result.correct is False, explain(result)
    races = [v for v in result.violations if v.code == "data-race"]
    assert races and kernel in races[0].message and words in races[0].message, explain(result)


@pytest.mark.parametrize(("name", "task_id"), HONEST, ids=[r[0] for r in HONEST])
def test_synchronised_or_independent_programs_pass(judge, name, task_id):
    result = judge(task_id, name)
    assert result.correct is True and not result.violations, explain(result)
