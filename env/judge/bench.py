"""The bench phase: the candidate timed on each bench case side by side with its baselines (paired
rounds, judge/paired.py), checked again after its timing window, all in one of the GPU's bench slots.

Bench shapes fill a GPU's memory: when it runs out while another evaluation's bench phase shares the
GPU, what the attempt recorded is undone and it runs again alone; only then is running out a verdict.
"""

from __future__ import annotations

import contextlib
import logging
import math
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from warpgym.env.common.device import ceilings_for, release_cached_memory, roofline_ms
from warpgym.env.common.timing import Calls
from warpgym.env.judge.baselines import Baselines, seeds_for
from warpgym.env.judge.channel import ask, stage_inputs
from warpgym.env.judge.findings import timing_findings
from warpgym.env.judge.machine import Sampler
from warpgym.env.judge.paired import PairedOutcome, TimeBlock, run_rounds
from warpgym.env.judge.plan import BENCH_DISTRIBUTION, Check
from warpgym.env.judge.pool import WorkerError
from warpgym.env.judge.result import CaseResult, MachineState, Ratio, Timing
from warpgym.env.judge.timed_trace import TraceBlock
from warpgym.env.judge.timed_values import ValueSample, judge_sample
from warpgym.env.protocol import messages as m
from warpgym.env.protocol.violations import violation
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

_T = TypeVar("_T")
AFTER_TIMING_SEED = 7
SETTLE_MS = 20.0
"""GPU spin before the bench check after a window (its inputs take seconds to send, and an idle GPU drops
its clock): the check's device time is set against the timed calls' (judge/timed_evidence.py), so it runs
with the GPU held alone, as they do (other contexts' kernels time-slice with it and stretch its kernels)."""
ORDER_EFFECT = 0.05
"""A ratio this far apart between a round's two orders is named in the result (``Timing.order_effect``)."""
NO_REPLY = m.RunReply(ok=False, error="no reply")


class SharedOutOfMemory(Exception):
    """The GPU ran out of memory in a bench phase that shared it with another evaluation's."""


log = logging.getLogger(__name__)


def out_of_memory(reply: m.Reply) -> bool:
    return not reply.ok and "OutOfMemoryError" in str(reply.error)


def raise_if_shared_oom(reply: m.Reply, alone: bool) -> None:
    if not alone and out_of_memory(reply):
        raise SharedOutOfMemory


def in_bench_slot(ev: Evaluation, attempt: Callable[[bool], _T],
                  undo: Callable[[], None] = lambda: None) -> _T:
    """``attempt(alone)`` in one of the GPU's bench slots; if the GPU's memory runs out while another
    evaluation's bench phase shares it, ``undo`` what the attempt recorded and run it again alone: with
    every slot, and the GPU lock held exclusively throughout, so that no other evaluation's check holds
    memory meanwhile (each gives its cache back after a check: ``Evaluation.release_memory``)."""
    from warpgym.env.common.timing import bench_slot, gpu_lock

    index = torch.device(ev.device).index or 0
    for alone in (False, True):
        with bench_slot(index, alone=alone), (gpu_lock(index) if alone else contextlib.nullcontext()):
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
    """The bench phase (paired timing, the bench check after it), in the GPU's bench slots."""
    result = ev.result
    marks = len(result.cases), len(result.violations), len(result.suspicious), result.correct

    traced = len(ev.timed_traces)

    def undo() -> None:
        del result.cases[marks[0]:], result.violations[marks[1]:], result.suspicious[marks[2]:]
        del ev.timed_traces[traced:]
        result.runtime_error, result.correct = None, marks[3]

    in_bench_slot(ev, lambda alone: bench_cases(ev, alone), undo)


def _add_seconds(ev: Evaluation, name: str, since: float) -> None:
    ev.result.seconds[name] = ev.result.seconds.get(name, 0.0) + time.perf_counter() - since


def _fail(ev: Evaluation, message: str) -> None:
    ev.result.runtime_error = message
    ev.result.correct = False


class _WindowEnded(Exception):
    """The candidate's side of a timing window failed (the reason is recorded, or is ``args[0]``)."""


def check_after_window(ev: Evaluation, after: Check) -> m.RunReply:
    """The bench check after a timing window, with the GPU held alone (no other context's work stretches
    it). The window's baselines leave their inputs and outputs in this process's cache first: on an H100
    the worker ran out of memory in this check while the judge still held 65 GiB of them."""
    from warpgym.env.common.timing import gpu_lock

    ev.release_memory()
    with gpu_lock(torch.device(ev.device).index or 0):
        return ev.run(after, settle_ms=SETTLE_MS) or NO_REPLY


def bench_cases(ev: Evaluation, alone: bool) -> None:
    task, result = ev.task, ev.result
    ceilings = ceilings_for(ev.device)
    timings: list[Timing] = []
    for case in task.cases("bench"):
        # The bench case is checked once, after the timing window, on inputs it never saw: a check
        # before it too would move every output out of the worker twice (a gigabyte for the largest
        # elementwise tasks), and a wrong result is thrown away with its timing.
        log.info("%s: timing window, bench case %s, baselines %s", task.id, case, task.baselines)
        try:
            started = time.perf_counter()
            traced_ms: list[float] = []
            sample = ValueSample(ev.options.paired.value_samples, ev.options.paired.min_rounds,
                                 ev.options.paired.value_seed)
            outcome, machine, baseline_errors = paired_window(ev, case, alone, traced_ms, sample)
            _add_seconds(ev, "timing_window", started)
        except WorkerError as exc:
            return _fail(ev, f"timing: {exc}")
        except _WindowEnded as exc:
            return _fail(ev, f"timing: {exc.args[0]}") if exc.args else None
        timing = timing_of(case, outcome, machine, baseline_errors)
        timing.traced_device_ms = round(statistics.median(traced_ms), 5) if traced_ms else None
        started = time.perf_counter()
        timing.sampled_values = judge_sample(ev, case, sample)
        _add_seconds(ev, "timed_values", started)
        if outcome.hidden_work:
            events, walls = ([ms for b in outcome.candidate for ms in getattr(b, clock)]
                             for clock in ("event_ms", "wall_ms"))
            result.suspicious.append(
                f"{case}: the wall clock ({statistics.median(walls):.3f} ms) is far above the CUDA events "
                f"({statistics.median(events):.3f} ms): work escapes the timed stream; the wall clock is "
                "used")
        # Check on fresh inputs after the timing window: a kernel that behaves differently once warm fails.
        after = Check("bench", case, AFTER_TIMING_SEED, BENCH_DISTRIBUTION)
        reply = check_after_window(ev, after)
        timing.checked_device_ms = device_ms(reply.device_trace)
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
        flops, nbytes = task.flops(case), task.bytes(case)
        timing.tflops = flops / (timing.median_ms * 1e9)
        timing.gbps = nbytes / (timing.median_ms * 1e6)
        if ceilings is not None:
            dtype = case.get("dtype", task.dtypes[0])
            timing.roofline_fraction = roofline_ms(ceilings, flops, nbytes, dtype) / timing.median_ms
            if timing.roofline_fraction > 1.05:
                result.suspicious.append(f"{case}: {timing.roofline_fraction:.2f}x the device's roofline")
        for name, effect in timing.order_effect.items():
            if abs(effect) > ORDER_EFFECT:
                result.suspicious.append(
                    f"{case}: the ratio to {name} read {effect:+.1%} in rounds that time the candidate first "
                    "against rounds that time it last: one side's block slows the block after it")
        vendor = timing.ratios.get("vendor")
        if vendor and vendor.median > 3:
            result.suspicious.append(f"{case}: {vendor.median:.1f}x faster than the vendor library")
        if timing.machine is not None:
            result.throttled += [r for r in timing.machine.flagged if r not in result.throttled]
        timings.append(timing)
    result.timing = timings
    if timings and not ev.options.paired.traced_blocks:
        result.skipped_checks.append("timing: no timed call was traced on the device (paired.traced_blocks "
                                     "is 0); the timed calls answered to the run-time policy only")
    names = set.intersection(*(set(t.ratios) for t in timings)) if timings else set()
    result.speedup = {n: _geomean([t.ratios[n].median for t in timings]) for n in sorted(names)}
    result.speedup_low = {n: _geomean([t.ratios[n].low for t in timings]) for n in sorted(names)}
    result.speedup_high = {n: _geomean([t.ratios[n].high for t in timings]) for n in sorted(names)}


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def device_ms(trace: dict[str, Any] | None, calls: int = 1) -> float | None:
    """Milliseconds per call in which the candidate's kernels ran on the device (a trace's ``busy_us``);
    None for a trace that is missing, broken or saw no kernel."""
    if not trace or trace.get("error") or not trace.get("busy_us"):
        return None
    return round(float(trace["busy_us"]) / 1e3 / max(1, calls), 5)


def paired_window(ev: Evaluation, case: dict[str, Any], alone: bool, traced_ms: list[float],
                  sample: ValueSample) -> tuple[PairedOutcome, MachineState, dict[str, str]]:
    """The candidate (in the worker) and the baselines (here) timed in alternating rounds, the GPU held
    alone from the warm-up to the last round, its state sampled throughout. Each traced block's device
    milliseconds per call go to ``traced_ms``; the blocks ``sample`` draws keep a call's outputs
    (judge/timed_values.py), one more block after the rounds if none did."""
    from warpgym.env.common.timing import gpu_lock

    index = torch.device(ev.device).index or 0
    staged = stage_inputs(ev, case, list(seeds_for(ev.task, case)), ev.options.limits.timing)
    if not staged.ok:
        raise_if_shared_oom(staged, alone)
        raise _WindowEnded(staged.error)
    candidate = _candidate_side(ev, case, alone, sample, len(seeds_for(ev.task, case)))
    traced = _traced_side(ev, case, alone, traced_ms)
    sides = Baselines(ev.task, case, ev.device, alone=alone, out_of_memory=SharedOutOfMemory, seeds=ev.seeds)
    try:
        with ev.gpu_shared():  # first calls compile (CPU work): the GPU is not held alone for them
            candidate(0, 1, 0.0, 0)
            sides.prepare()
        sampler = Sampler(index)
        with gpu_lock(index), sampler.running():
            outcome = run_rounds(candidate, sides.sides(), ev.options.paired, warmup_calls=ev.options.warmup,
                                 max_rounds=ev.options.max_rounds(), trace=traced)
            if sample.owed:  # a block like the rounds' (its times are not kept): the worker cannot tell
                sample.force = True
                candidate(outcome.block_calls, 0, 0.0, outcome.rounds * outcome.block_calls)
    finally:
        sides.close()
        _release(ev, case)
    return outcome, sampler.state(), {**sides.errors, **outcome.failed}


def _block(ev: Evaluation, request: m.TimeBlockRequest, alone: bool, label: str = "") -> m.TimeBlockReply:
    """One block of the candidate's calls in the worker, its findings recorded (a traced block's trace
    under ``label``); a failure or a broken rule ends the window."""
    reply: m.TimeBlockReply = ask(ev.workers.run, request, ev.options.limits.timing)
    if not reply.ok:
        raise_if_shared_oom(reply, alone)
        raise _WindowEnded(reply.error)
    if request.trace and reply.device_trace is not None:
        ev.timed_traces.append((label, reply.device_trace))
    if timing_findings(ev, reply):
        raise _WindowEnded
    return reply


def _candidate_side(ev: Evaluation, case: dict[str, Any], alone: bool, sample: ValueSample,
                    sets: int) -> TimeBlock:
    def side(calls: int, warmup_calls: int, warmup_seconds: float, start: int) -> tuple[Calls, float | None]:
        sampled = sample.fields(calls, start, sets)
        reply = _block(ev, m.TimeBlockRequest(calls=calls, warmup_calls=warmup_calls,
                                              warmup_seconds=warmup_seconds, start=start, **sampled), alone)
        if sampled:
            sample.record(reply)
        calls = Calls(reply.event_ms, reply.wall_ms, reply.issue_ms, starved=reply.starved,
                      retimed=reply.retimed)
        return calls, reply.warmup_call_ms

    return side


def _traced_side(ev: Evaluation, case: dict[str, Any], alone: bool,
                 device_per_call: list[float]) -> TraceBlock:
    """The candidate's block under CUDA activity tracing, asked for only when it runs (judge/timed_trace.py);
    its times are not kept, and it takes the seconds it returns. What its kernels took on the device, per
    call, goes to ``device_per_call``."""
    def side(calls: int, start: int, index: int) -> float:
        started = time.perf_counter()
        label = f"a traced block of {calls} timed calls on {case_label(case)}, beside round {index + 1}"
        reply = _block(ev, m.TimeBlockRequest(calls=calls, start=start, trace=True), alone, label)
        ran = int((reply.device_trace or {}).get("calls") or calls)  # with the calls timed again
        if (per_call := device_ms(reply.device_trace, ran)) is not None:
            device_per_call.append(per_call)
        return time.perf_counter() - started

    return side


def _release(ev: Evaluation, case: dict[str, Any]) -> None:
    """The worker drops the window's inputs (a bench case's can take gigabytes)."""
    if not getattr(ev.workers.run, "alive", False):
        return
    request = m.TimeBlockRequest(calls=0, release=True)
    with contextlib.suppress(WorkerError, m.ProtocolError):
        ask(ev.workers.run, request, ev.options.limits.run)


def timing_of(case: dict[str, Any], outcome: PairedOutcome, machine: MachineState,
              baseline_errors: dict[str, str]) -> Timing:
    """The case's figures, every one from this window."""
    blocks = outcome.candidate_ms()
    calls = [ms for block in blocks for ms in block]
    issue = [ms for block in outcome.candidate for ms in block.issue_ms]
    ratios = {}
    for name in outcome.baselines:
        interval = outcome.speedup(name)
        ratios[name] = Ratio(median=interval.median, low=interval.low, high=interval.high,
                             coverage=interval.coverage, rounds=interval.n)
    return Timing(
        case=case, median_ms=statistics.median(calls), min_ms=min(calls), max_ms=max(calls), runs=len(calls),
        baselines_ms={name: statistics.median([ms for b in blocks for ms in b.event_ms])
                      for name, blocks in outcome.baselines.items()},
        host_issue_ms=statistics.median(issue), starved_calls=sum(b.starved for b in outcome.candidate),
        retimed_calls=sum(b.retimed for b in outcome.candidate), ratios=ratios, rounds=outcome.rounds,
        block_calls=outcome.block_calls, ended_by=outcome.ended_by, settled=outcome.settled,
        settling_rounds=outcome.settling_rounds, baseline_errors=baseline_errors,
        round_ms=[round(statistics.median(block), 5) for block in blocks],
        round_ratios={name: [round(r, 5) for r in outcome.round_ratios(name)] for name in outcome.baselines},
        order_effect={name: round(e, 5) for name in outcome.baselines
                      if (e := outcome.order_effect(name)) is not None},
        machine=machine, traced_blocks=len(outcome.traced), traced_calls=sum(b.calls for b in outcome.traced),
        trace_seconds=round(sum(b.seconds for b in outcome.traced), 4))


def right_when_cold(ev: Evaluation, check: Check) -> bool:
    """Whether a bench case that failed after the timing loop passes in a new worker. The bench case
    is not checked before the loop, so only this tells a kernel that changes once warm (cheating)
    from one that is wrong at that size from its first call."""
    ev.workers.run.stop()
    if not ev.load():
        return False
    reply = ev.run(check) or NO_REPLY
    return reply.ok and bool(ev.judge(check, reply).passed)
