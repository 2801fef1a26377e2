"""The timing loop against a simulated GPU: a call issued more slowly than its kernel runs.

The simulation keeps two clocks, the host's and the GPU's queue: work queued at host time t starts at
max(t, when the GPU is free). Without a long enough spin before the start event, the events of a call
that takes the host 0.3 ms to issue and the GPU 0.1 ms to run read 0.3 ms; the loop must notice and
time it again after a longer spin, and must not call the spin hidden work.
"""

from __future__ import annotations

import pytest
from warpgym.env.common import timing

CYCLES_PER_MS = 1000.0
FLUSH_MS = 0.05


class SimulatedGPU:
    def __init__(self) -> None:
        self.host = 0.0
        self.gpu = 0.0
        self.side = 0.0

    def queue(self, ms: float) -> float:
        self.gpu = max(self.gpu, self.host) + ms
        return self.gpu

    def synchronize(self) -> None:
        self.host = max(self.host, self.gpu, self.side)

    def clock(self) -> float:
        return self.host / 1e3

    def event_cls(self, enable_timing: bool = True) -> SimulatedEvent:
        return SimulatedEvent(self)

    def sleep(self, cycles: int) -> None:
        self.queue(cycles / CYCLES_PER_MS)


class SimulatedEvent:
    def __init__(self, gpu: SimulatedGPU) -> None:
        self.sim, self.at = gpu, None

    def record(self) -> None:
        self.at = self.sim.queue(0.0)

    def query(self) -> bool:
        return self.at <= self.sim.host

    def elapsed_time(self, other: SimulatedEvent) -> float:
        return other.at - self.at


class Flush:
    def __init__(self, gpu: SimulatedGPU) -> None:
        self.sim = gpu

    def zero_(self) -> None:
        self.sim.queue(FLUSH_MS)


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> SimulatedGPU:
    gpu = SimulatedGPU()
    monkeypatch.setattr(timing.time, "perf_counter", gpu.clock)
    return gpu


def run(sim: SimulatedGPU, fn, count: int = 8, spin_cycles: int = 0) -> timing.Calls:
    return timing.time_calls(fn, [{}], count, event_cls=sim.event_cls, synchronize=sim.synchronize,
                             flush=Flush(sim), spin_cycles=spin_cycles, sleep=sim.sleep,
                             cycles_per_ms=CYCLES_PER_MS)


def slow_issue(sim: SimulatedGPU, issue_ms: float, kernel_ms: float):
    def fn() -> None:
        sim.host += issue_ms
        sim.queue(kernel_ms)
    return fn


def test_a_call_issued_slower_than_it_runs_is_timed_again_after_a_longer_spin(sim: SimulatedGPU) -> None:
    calls = run(sim, slow_issue(sim, issue_ms=0.3, kernel_ms=0.1))
    assert calls.event_ms == pytest.approx([0.1] * 8)
    assert calls.retimed == 1 and calls.starved == 0
    assert calls.spin_cycles >= 0.3 * CYCLES_PER_MS
    assert not timing.hidden_work(0.1, max(calls.wall_ms))


def test_without_the_spin_the_events_count_the_host(sim: SimulatedGPU) -> None:
    """What the spin is for: the same call timed with no retry reads the issue time."""
    fn = slow_issue(sim, issue_ms=0.3, kernel_ms=0.1)
    original = timing.MAX_STARVED_RETRIES
    try:
        timing.MAX_STARVED_RETRIES = 0
        calls = run(sim, fn, count=3)
    finally:
        timing.MAX_STARVED_RETRIES = original
    assert calls.event_ms[0] == pytest.approx(0.3 - FLUSH_MS + 0.1)
    assert calls.starved >= 1


def test_a_spin_carried_over_from_the_last_block_needs_no_retry(sim: SimulatedGPU) -> None:
    first = run(sim, slow_issue(sim, 0.3, 0.1), count=2)
    second = run(sim, slow_issue(sim, 0.3, 0.1), count=4, spin_cycles=first.spin_cycles)
    assert second.retimed == 0 and second.event_ms == pytest.approx([0.1] * 4)


def test_a_call_that_waits_for_the_gpu_itself_is_host_bound_and_counted(sim: SimulatedGPU) -> None:
    def syncing() -> None:
        sim.synchronize()  # an .item() inside the call: no spin can queue it ahead
        sim.host += 0.3
        sim.queue(0.1)

    calls = run(sim, syncing, count=6)
    assert calls.spin_cycles == timing.HOST_BOUND
    assert calls.starved == 6
    assert calls.retimed <= timing.MAX_STARVED_RETRIES + 3  # the spin doubles to the longest, then stops
    longest = timing.MAX_PREROLL_MS * CYCLES_PER_MS
    assert all(ms <= longest for ms in calls.event_ms)


def test_work_on_a_side_stream_still_shows_on_the_wall_clock(sim: SimulatedGPU) -> None:
    def hides() -> None:
        sim.host += 0.3
        sim.queue(0.01)                      # a token kernel on the timed stream
        sim.side = max(sim.side, sim.host) + 2.0  # the real work, on a stream the events do not see

    calls = run(sim, hides, count=4)
    assert max(calls.event_ms) < 0.1
    assert timing.hidden_work(min(calls.event_ms), min(calls.wall_ms))
