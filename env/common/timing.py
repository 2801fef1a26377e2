"""GPU timing: CUDA events around each call, L2 flushed between calls, inputs rotated.

Two clocks are read for every call: CUDA events on the current stream, and the host's wall
clock around the call plus a device-wide synchronise. Work the candidate hides on another
stream, thread or process escapes the events but not the wall clock, so a wall clock far
above the events is reported (``hidden_work``) and the larger figure is used.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from warpgym.env.common.device import physical_gpu

L2_FLUSH_BYTES = 256 << 20  # several times the H200's 60 MB L2
WARMUP_SECONDS = 0.1
MAX_WARMUP_CALLS = 2000
# A timing loop holds its GPU alone, so every other evaluation on it waits: a loop that would run
# longer than this times fewer calls (torch's QR at a bench shape, 1.75 s a call, held an H200 for
# six minutes with 35 calls per baseline), never fewer than MIN_TIMED_CALLS.
MAX_TIMED_SECONDS = 2.0
MIN_TIMED_CALLS = 3
HIDDEN_WORK_RATIO = 1.5
HIDDEN_WORK_SLACK_MS = 0.05


_HELD = threading.local()


@contextlib.contextmanager
def gpu_lock(device_index: int | None = None, *, shared: bool = False) -> Iterator[None]:
    """Holds the GPU: exclusively for timing, shared for any other work the harness puts on it.

    Evaluations in other processes or threads compile on CPU cores whenever they like, and run
    their checks on the GPU together (shared), but a timing loop has the GPU to itself: it waits
    for the checks in flight, and new ones wait for it. A thread that already holds the lock (a
    check inside a timed section, or the reverse) does not take it again.

    Linux's flock grants a shared lock while an exclusive one is waiting, so with several evaluations
    checking on one GPU a timing loop could wait for as long as their checks kept overlapping. Every
    request therefore passes a gate first: a timing loop holds it exclusively while it waits, so checks
    asked for after it wait behind it, and a check holds it shared only until it is in.
    """
    physical, held = _physical_and_held(device_index, "gpus")
    if physical in held:
        yield
        return
    path, gate_path = (_created(_lock_path(name)) for name in gpu_lock_files(physical))
    with open(path) as handle:
        with open(gate_path) as gate:
            fcntl.flock(gate, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        with _marked_held(held, physical, handle):
            yield


def gpu_lock_files(physical: str) -> tuple[str, str]:
    """The names of a GPU's lock file and of the gate in front of it (``gpu_lock``)."""
    return f"warpgym-gpu-{physical}.lock", f"warpgym-gpu-{physical}.gate"


def _created(path: str) -> str:
    if not os.path.exists(path):
        open(path, "a").close()  # noqa: SIM115 - created once, then only read-opened (a sandbox may forbid writes)
    return path


BENCH_SLOTS = 2  # bench phases at once on one GPU: each can hold tens of GB (inputs, float64 answers)


@contextlib.contextmanager
def bench_slot(device_index: int | None = None, slots: int | None = None, *, alone: bool = False
               ) -> Iterator[None]:
    """One of a GPU's few slots for an evaluation's bench phase (its timing, bench check and baselines).

    Checks at dev and heldout sizes need little memory and share the GPU freely, but bench shapes fill
    it: four evaluations timing at once ran a 140 GB H200 out of memory. Other processes wait for a free
    slot (``WARPGYM_BENCH_SLOTS`` overrides the count). ``alone`` takes every slot, for a bench phase
    that ran out of memory beside another one (two attention references at once need over 140 GB).
    Separate from ``gpu_lock``, which a worker takes inside the slot its evaluator holds.
    """
    physical, held = _physical_and_held(device_index, "slots")
    if physical in held:
        yield
        return
    count = max(1, slots or int(os.environ.get("WARPGYM_BENCH_SLOTS", BENCH_SLOTS)))
    handles = [open(_lock_path(f"warpgym-gpu-{physical}-bench-{k}.lock"), "a+")  # noqa: SIM115 - closed below
               for k in range(count)]
    try:
        if alone:
            for handle in handles:  # blocking and in one order: two phases waiting to be alone never deadlock
                fcntl.flock(handle, fcntl.LOCK_EX)
            taken = handles
        else:
            while (free := next((h for h in handles if _try_lock(h)), None)) is None:
                time.sleep(0.05)
            taken = [free]
        with _marked_held(held, physical, *taken):
            yield
    finally:
        for handle in handles:
            handle.close()


def _physical_and_held(device_index: int | None, kind: str) -> tuple[str, set[str]]:
    """The physical GPU id, and this thread's set of GPUs it already holds a ``kind`` lock on."""
    physical = physical_gpu(torch.cuda.current_device() if device_index is None else device_index)
    held = getattr(_HELD, kind, None)
    if held is None:
        held = set()
        setattr(_HELD, kind, held)
    return physical, held


@contextlib.contextmanager
def _marked_held(held: set[str], physical: str, *locked: Any) -> Iterator[None]:
    """This thread holds ``physical`` (so it does not wait for itself) until the body ends; then unlock."""
    held.add(physical)
    try:
        yield
    finally:
        held.discard(physical)
        for handle in locked:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_path(name: str) -> str:
    return os.path.join(os.environ.get("WARPGYM_LOCK_DIR", tempfile.gettempdir()), name)


def _try_lock(handle: Any) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def time_callable(fn: Callable[..., Any], input_sets: Sequence[dict[str, Any]], *, warmup: int = 5,
                  reps: int = 30, event_cls: Any = None, synchronize: Callable[[], None] | None = None,
                  preroll_ms: float = 0.0) -> dict[str, Any]:
    """Median milliseconds per call of ``fn(**inputs)``, rotating over ``input_sets``.

    ``preroll_ms`` queues a GPU spin of that length between the L2 flush and the start event, so
    that up to that much of the call's host-side launch work happens while the GPU is still busy.
    Only scripts/timing_probe.py sets it: on the H200 it changed nothing (the host issues a call in
    ~0.1 ms) and it would let side-stream work hide under the spin, so the evaluator leaves it at 0.
    """
    event_cls = event_cls or torch.cuda.Event
    synchronize = synchronize or torch.cuda.synchronize
    with gpu_lock(shared=True):
        # The first call compiles (torch.compile, Triton's JIT): CPU work, done before the GPU is held alone.
        fn(**input_sets[0])
        synchronize()
    with gpu_lock():
        return _time_callable(fn, input_sets, warmup=warmup, reps=reps, event_cls=event_cls,
                              synchronize=synchronize, preroll_ms=preroll_ms)


def _time_callable(fn: Callable[..., Any], input_sets: Sequence[dict[str, Any]], *, warmup: int, reps: int,
                   event_cls: Any, synchronize: Callable[[], None], preroll_ms: float = 0.0,
                   ) -> dict[str, Any]:
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    synchronize()
    started = time.perf_counter()
    fn(**input_sets[0])
    synchronize()
    warmup, reps = calls_within_budget(time.perf_counter() - started, warmup, reps)
    warm_up(fn, input_sets, warmup, WARMUP_SECONDS - (time.perf_counter() - started), synchronize, done=1)
    calls = time_calls(fn, input_sets, reps, event_cls=event_cls, synchronize=synchronize, flush=flush,
                       spin_cycles=spin_cycles_of(preroll_ms))
    del flush
    median_event = statistics.median(calls.event_ms)
    median_wall = statistics.median(calls.wall_ms)
    hidden = hidden_work(median_event, median_wall)
    chosen = calls.wall_ms if hidden else calls.event_ms
    return {
        "median_ms": statistics.median(chosen),
        "min_ms": min(chosen),
        "max_ms": max(chosen),
        "runs": reps,
        "event_median_ms": median_event,
        "wall_median_ms": median_wall,
        "hidden_work": hidden,
        "issue_median_ms": statistics.median(calls.issue_ms),
        "event_ms": [round(v, 5) for v in calls.event_ms],
    }


def warm_up(fn: Callable[..., Any], input_sets: Sequence[dict[str, Any]], calls: int, seconds: float,
            synchronize: Callable[[], None], done: int = 0) -> int:
    """At least ``calls`` calls, and more until ``seconds`` have passed (at most MAX_WARMUP_CALLS): the
    GPU's clocks settle (power, temperature) within tens of milliseconds of steady work, and a few calls
    of a short kernel would end well before that. ``done`` calls were made already; returns the count."""
    started = time.perf_counter()
    i = done
    while i < calls or (time.perf_counter() - started < seconds and i < MAX_WARMUP_CALLS):
        fn(**input_sets[i % len(input_sets)])
        i += 1
        if i % 64 == 0:
            synchronize()  # keep the host from queueing far ahead of the GPU
    synchronize()
    return i


@dataclass
class Calls:
    """Milliseconds of each timed call: CUDA events, the wall clock, and the host's time to issue it."""

    event_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    issue_ms: list[float] = field(default_factory=list)
    starved: int = 0
    """Calls kept although the GPU reached their start event before the host had issued them (after
    MAX_STARVED_RETRIES longer spins, or with the longest spin: a call that waits for the GPU itself)."""
    retimed: int = 0
    """Calls timed again, after a longer spin, because the GPU had reached their start event too soon."""
    spin_cycles: int = 0
    """The spin the last call ran after: the next block starts from it (HOST_BOUND: no spin, no retry)."""
    kept: Any = None
    """What ``time_calls``'s ``read`` made of the result of the call at ``keep`` (its last attempt's), as soon
    as that call was done: the result itself without a ``read``."""


MAX_STARVED_RETRIES = 3
HOST_BOUND = -1
"""``spin_cycles`` once a call stayed starved after the longest spin: it waits for the GPU itself (a
``.item()``, a synchronise), so no spin can queue it ahead, and its later calls run with none."""


def time_calls(fn: Callable[..., Any], input_sets: Sequence[dict[str, Any]], count: int, *, event_cls: Any,
               synchronize: Callable[[], None], flush: torch.Tensor, start: int = 0, spin_cycles: int = 0,
               sleep: Callable[[int], None] | None = None, cycles_per_ms: float | None = None,
               before: Callable[[], None] | None = None, keep: int | None = None,
               read: Callable[[Any], Any] | None = None) -> Calls:
    """``count`` calls of ``fn``, rotating over ``input_sets`` from position ``start``, each after an L2
    flush and timed by both clocks: the one loop behind every timing, the harness's and the worker's.

    The events measure the call's GPU work only if its launches are queued before the GPU reaches the
    start event; otherwise they count the GPU waiting for the host (a worker under the run-time policy
    takes about 0.3 ms to issue a call, longer than a short kernel runs). So a GPU spin of
    ``spin_cycles`` is queued before the start event, and a call is *starved* when its start event is
    already complete as ``fn`` returns: it is timed again after a longer spin (its issue time plus
    PREROLL_MARGIN_MS, at least twice the last spin, at most MAX_PREROLL_MS), up to
    MAX_STARVED_RETRIES times (HOST_BOUND: a call that waits for the GPU itself). The spin's GPU time
    (an event before it) is taken off the wall clock, so a spin never reads as hidden work; work on a
    side stream that runs under the spin is what the device trace of sampled timed calls looks for.
    ``before`` runs ahead of each attempt's synchronise, outside both clocks (the worker poisons memory
    there, as before a checked call); HOST_BOUND as ``spin_cycles`` times every call once, with no spin.
    The ``keep``-th call's result (0 is the first of the block) goes through ``read`` once the call is done
    (after its end event and synchronise, before the next call starts: a later call cannot change what is
    read), and ``Calls.kept`` holds what ``read`` returned; every other call's result is dropped as it
    returns."""
    sleep = sleep or torch.cuda._sleep
    calls = Calls(spin_cycles=spin_cycles)
    longest = spin_cycles_of(MAX_PREROLL_MS, cycles_per_ms)
    for i in range(start, start + count):
        inputs = input_sets[i % len(input_sets)]
        for attempt in range(MAX_STARVED_RETRIES + 1):
            spun, begin, end = (event_cls(enable_timing=True) for _ in range(3))
            if before is not None:
                before()
            synchronize()
            flush.zero_()
            spun.record()
            if calls.spin_cycles > 0:
                sleep(calls.spin_cycles)
            wall_start = time.perf_counter()
            begin.record()
            if i - start == keep:
                calls.kept = None  # an earlier attempt's
                calls.kept = fn(**inputs)
            else:
                fn(**inputs)
            issued = (time.perf_counter() - wall_start) * 1e3
            starved = bool(begin.query())
            end.record()
            synchronize()
            wall = (time.perf_counter() - wall_start) * 1e3
            if starved and calls.spin_cycles >= longest:
                calls.spin_cycles = HOST_BOUND
            if not starved or attempt == MAX_STARVED_RETRIES or calls.spin_cycles == HOST_BOUND:
                break
            calls.retimed += 1
            calls.spin_cycles = min(longest, max(2 * calls.spin_cycles,
                                                 spin_cycles_of(issued + PREROLL_MARGIN_MS, cycles_per_ms)))
        if i - start == keep and read is not None:
            calls.kept = read(calls.kept)
        calls.starved += starved
        event_ms = begin.elapsed_time(end)
        calls.issue_ms.append(issued)
        calls.event_ms.append(event_ms)
        calls.wall_ms.append(max(event_ms, wall - spun.elapsed_time(begin)))
    return calls


def hidden_work(median_event_ms: float, median_wall_ms: float) -> bool:
    """Whether the wall clock is so far above the events that work escaped the timed stream."""
    return median_wall_ms > HIDDEN_WORK_RATIO * median_event_ms + HIDDEN_WORK_SLACK_MS + _launch_overhead_ms()


def calls_within_budget(call_seconds: float, warmup: int, reps: int) -> tuple[int, int]:
    """Warm-up and timed calls for a call of ``call_seconds``: as asked while they fit in
    MAX_TIMED_SECONDS, else no more warm-up (the call that measured it was one) and as many timed
    calls as fit, at least MIN_TIMED_CALLS (a call that long varies little from run to run)."""
    if call_seconds * (warmup + reps) <= MAX_TIMED_SECONDS:
        return warmup, reps
    fitting = int(MAX_TIMED_SECONDS / max(call_seconds, 1e-9))
    return 1, max(MIN_TIMED_CALLS, min(reps, fitting))


_CYCLES_PER_MS: list[float] = []
PREROLL_MARGIN_MS = 0.02
MAX_PREROLL_MS = 5.0


def issue_ms(fn: Callable[..., Any], inputs: dict[str, Any], synchronize: Callable[[], None]) -> float:
    """Host milliseconds to issue one call (until ``fn`` returns), on an idle GPU."""
    synchronize()
    started = time.perf_counter()
    fn(**inputs)
    took = (time.perf_counter() - started) * 1e3
    synchronize()
    return took


def preroll_ms(issue: Sequence[float]) -> float:
    """The GPU spin to queue before a timed call so that its host-side issue ends before the GPU is free.

    The events bracket the call; the L2 flush before the start event keeps the GPU busy while the host
    issues the call, but a worker under the run-time policy takes longer to issue a call (about 0.3 ms
    measured on the H200) than a flush takes to run, and the events then count the GPU waiting for the
    host, which a real program, issuing ahead, does not pay. A spin just longer than the median issue
    time, queued before the start event, covers it; the wall clock (taken after the spin is queued,
    ended when the whole device is idle) grows by the margin only, so hidden side-stream work is seen
    as before."""
    if not issue:
        return 0.0
    return min(statistics.median(issue) + PREROLL_MARGIN_MS, MAX_PREROLL_MS)


def spin_cycles_of(ms: float, cycles_per_ms: float | None = None) -> int:
    """Cycles of ``torch.cuda._sleep`` that last ``ms`` (at the rate measured here unless given)."""
    return int(ms * (cycles_per_ms or _spin_cycles_per_ms())) if ms > 0 else 0


def _spin_cycles_per_ms() -> float:
    """The rate of ``torch.cuda._sleep``'s clock, measured once per process with events."""
    if not _CYCLES_PER_MS:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        start.record()
        torch.cuda._sleep(2_000_000)
        end.record()
        end.synchronize()
        _CYCLES_PER_MS.append(2_000_000 / max(start.elapsed_time(end), 1e-3))
    return _CYCLES_PER_MS[0]


def _launch_overhead_ms() -> float:
    """The host-side cost that the wall clock adds to any call (launch and synchronise)."""
    return 0.2
