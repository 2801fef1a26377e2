"""The bench phase: the candidate timed on each bench case, checked again after its timing loop, and
compared with the baselines, all in one of the GPU's bench slots.

Bench shapes fill a GPU's memory: when it runs out while another evaluation's bench phase shares the
GPU, what the attempt recorded is undone and it runs again alone; only then is running out a verdict.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import torch
from warpgym.env.common.device import ceilings_for, release_cached_memory, roofline_ms
from warpgym.env.judge import shipped
from warpgym.env.judge.channel import ask
from warpgym.env.judge.findings import timing_findings
from warpgym.env.judge.plan import BENCH_DISTRIBUTION, Check
from warpgym.env.judge.pool import WorkerError
from warpgym.env.judge.result import CaseResult, Timing
from warpgym.env.protocol import messages as m
from warpgym.env.protocol.violations import violation

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

_T = TypeVar("_T")
AFTER_TIMING_SEED = 7
NO_REPLY = m.RunReply(ok=False, error="no reply")


class SharedOutOfMemory(Exception):
    """The GPU ran out of memory in a bench phase that shared it with another evaluation's."""


def out_of_memory(reply: m.Reply) -> bool:
    return not reply.ok and "OutOfMemoryError" in str(reply.error)


def raise_if_shared_oom(reply: m.Reply, alone: bool) -> None:
    if not alone and out_of_memory(reply):
        raise SharedOutOfMemory


def in_bench_slot(ev: Evaluation, attempt: Callable[[bool], _T],
                  undo: Callable[[], None] = lambda: None) -> _T:
    """``attempt(alone)`` in one of the GPU's bench slots; if the GPU's memory runs out while another
    evaluation's bench phase shares it, ``undo`` what the attempt recorded and run it again with every
    slot (alone on the GPU)."""
    from warpgym.env.common.timing import bench_slot

    index = torch.device(ev.device).index or 0
    for alone in (False, True):
        with bench_slot(index, alone=alone):
            try:
                return attempt(alone)
            # torch's: the harness's own reference or inputs at a bench shape ran out here
            except (SharedOutOfMemory, torch.OutOfMemoryError):
                if alone:
                    raise
                undo()
            finally:
                release_cached_memory(ev.device)  # inside the slot: the next attempt needs it
    raise AssertionError("the attempt alone returns or raises")


def bench_check(ev: Evaluation, check: Check) -> tuple[m.RunReply | None, CaseResult | None]:
    """A bench-size check outside the timing phase (timing off) uses the GPU's memory as the timing
    phase does (four evaluations checking bench shapes at once ran an H200 out of memory)."""
    def attempt(alone: bool) -> tuple[m.RunReply | None, CaseResult | None]:
        reply = ev.run(check)
        if reply is None:
            return None, None
        raise_if_shared_oom(reply, alone)
        return reply, ev.judge(check, reply)

    return in_bench_slot(ev, attempt)


def timing(ev: Evaluation) -> None:
    """The bench phase (timing, the bench check after it, baselines), in the GPU's bench slots."""
    result = ev.result
    marks = len(result.cases), len(result.violations), len(result.suspicious), result.correct

    def undo() -> None:
        del result.cases[marks[0]:], result.violations[marks[1]:], result.suspicious[marks[2]:]
        result.runtime_error, result.correct = None, marks[3]

    in_bench_slot(ev, lambda alone: bench_cases(ev, alone), undo)


def _add_seconds(ev: Evaluation, name: str, since: float) -> None:
    ev.result.seconds[name] = ev.result.seconds.get(name, 0.0) + time.perf_counter() - since


def _fail(ev: Evaluation, message: str) -> None:
    ev.result.runtime_error = message
    ev.result.correct = False


def bench_cases(ev: Evaluation, alone: bool) -> None:
    task, options, result = ev.task, ev.options, ev.result
    ceilings = ceilings_for(ev.device)
    timings: list[Timing] = []
    ratios: dict[str, list[float]] = {}
    for case in task.cases("bench"):
        # The bench case is checked once, after the timing loop, on inputs the loop never saw: a
        # check before it too would move every output out of the worker twice (a gigabyte for
        # the largest elementwise tasks), and a wrong result is thrown away with its timing.
        request = m.TimeRequest(task=task.id, case=case, seeds=[0, 1, 2], warmup=options.warmup,
                                reps=options.reps, **shipped.time_fields(ev, case, [0, 1, 2]))
        try:
            started = time.perf_counter()
            stats: m.TimeReply = ask(ev.workers.run, request, options.limits.timing)
            _add_seconds(ev, "timing_candidate", started)
        except WorkerError as exc:
            return _fail(ev, f"timing: {exc}")
        if not stats.ok:
            raise_if_shared_oom(stats, alone)
            return _fail(ev, f"timing: {stats.error}")
        if timing_findings(ev, stats):
            return
        if stats.hidden_work:
            result.suspicious.append(
                f"{case}: the wall clock ({stats.wall_median_ms:.3f} ms) is far above the CUDA events "
                f"({stats.event_median_ms:.3f} ms): work escapes the timed stream; the wall clock is used")
        # Check on fresh inputs after the timing loop: a kernel that behaves differently once warm fails.
        after = Check("bench", case, AFTER_TIMING_SEED, BENCH_DISTRIBUTION)
        reply = ev.run(after) or NO_REPLY
        if out_of_memory(reply):
            # Not evidence of a kernel that changes once warm: the GPU's memory ran out under it.
            raise_if_shared_oom(reply, alone)
            return _fail(ev, f"bench check after the timing loop: {reply.error}")
        recheck = ev.judge(after, reply)
        result.cases.append(recheck)
        if not recheck.passed:
            result.correct = False
            if not right_when_cold(ev, after):
                return  # wrong at this size from its first call (an offset overflow...): a wrong answer
            result.violations.append(violation(
                "inconsistent", earlier="in the checks before the timing loop",
                later="after it (a new process computes this case right)"))
            return
        started = time.perf_counter()
        baselines = ev.baseline_times(case, alone)
        _add_seconds(ev, "timing_baselines", started)
        assert stats.median_ms is not None and stats.min_ms is not None and stats.max_ms is not None
        timing = Timing(case=case, median_ms=stats.median_ms, min_ms=stats.min_ms, max_ms=stats.max_ms,
                        runs=stats.runs or 0, baselines_ms=baselines, host_issue_ms=stats.issue_median_ms)
        flops, nbytes = task.flops(case), task.bytes(case)
        timing.tflops = flops / (timing.median_ms * 1e9)
        timing.gbps = nbytes / (timing.median_ms * 1e6)
        if ceilings is not None:
            dtype = case.get("dtype", task.dtypes[0])
            timing.roofline_fraction = roofline_ms(ceilings, flops, nbytes, dtype) / timing.median_ms
            if timing.roofline_fraction > 1.05:
                result.suspicious.append(f"{case}: {timing.roofline_fraction:.2f}x the device's roofline")
        for name, ms in baselines.items():
            ratios.setdefault(name, []).append(ms / timing.median_ms)
        vendor = baselines.get("vendor")
        if vendor and vendor / timing.median_ms > 3:
            result.suspicious.append(
                f"{case}: {vendor / timing.median_ms:.1f}x faster than the vendor library")
        timings.append(timing)
    result.timing = timings
    result.speedup = {name: math.exp(statistics.fmean(math.log(r) for r in rs))
                      for name, rs in ratios.items()}


def right_when_cold(ev: Evaluation, check: Check) -> bool:
    """Whether a bench case that failed after the timing loop passes in a new worker. The bench case
    is not checked before the loop, so only this tells a kernel that changes once warm (cheating)
    from one that is wrong at that size from its first call."""
    ev.workers.run.stop()
    if not ev.load():
        return False
    reply = ev.run(check) or NO_REPLY
    return reply.ok and bool(ev.judge(check, reply).passed)
