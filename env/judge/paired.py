"""Paired timing: the candidate and its baselines timed in the same window, in alternating rounds.

A GPU at its power cap runs a kernel several percent faster or slower from one second to the next,
so a baseline timed at another moment divides a different clock. Here every round times a block of the
candidate and a block of each baseline back to back (the order reversed each round, so neither side
always runs first), and each round gives one ratio per baseline; a drift of the clock moves both sides
of a round and cancels in its ratio. The speedup is the median of the rounds' ratios with an
order-statistics interval (judge/ratios.py), widened by what differs between two evaluations of the
same pair and no window can sample (options.PairedTiming.between_evaluations); rounds go on until the
window's own interval is narrow enough or the budget is spent (options.PairedTiming).

Nothing here touches a GPU: a side is a callable that times a block and returns its calls, so the
rounds and the stop rule run the same with the worker and the harness's baselines (judge/bench.py)
as with the fake timers of the tests.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from warpgym.env.common.timing import WARMUP_SECONDS, Calls, hidden_work
from warpgym.env.judge.options import PairedTiming
from warpgym.env.judge.ratios import Interval, median_interval
from warpgym.env.judge.timed_trace import TraceBlock, TracedBlock, TraceSample

TimeBlock = Callable[[int, int, float, int], tuple[Calls, float | None]]
"""``(calls, warmup_calls, warmup_seconds, start) -> (calls timed, mean ms of a warm-up call)``."""

MIN_ROUNDS = 2
"""Rounds that always run, whatever the budget: one with each order."""


class BaselineFailed(Exception):
    """A baseline that cannot be timed (raised by its side): it is left out of the window, with the reason."""


@dataclass
class PairedOutcome:
    """Every block of a window, and what ended it."""

    candidate: list[Calls] = field(default_factory=list)
    baselines: dict[str, list[Calls]] = field(default_factory=dict)
    ended_by: Literal["precision", "budget"] = "budget"
    block_calls: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    """Baselines that failed in the window (left out of the ratios), with the reason."""
    traced: list[TracedBlock] = field(default_factory=list)
    """The candidate's blocks run under CUDA activity tracing (judge/timed_trace.py): not in ``candidate``."""
    between_evaluations: float = 0.0
    """Relative uncertainty added to every interval (options.PairedTiming.between_evaluations)."""
    settling_rounds: int = 0
    """Rounds timed and thrown away before the first counted one (``_settle``)."""

    @property
    def settled(self) -> bool:
        """Whether a settling round ran before the first counted one."""
        return self.settling_rounds > 0

    @property
    def rounds(self) -> int:
        return len(self.candidate)

    @property
    def hidden_work(self) -> bool:
        """Whether the candidate's wall clock is far above its events over the window (work escaping
        the timed stream): its times are then the wall clock's, as in common/timing.time_callable."""
        events = [v for block in self.candidate for v in block.event_ms]
        walls = [v for block in self.candidate for v in block.wall_ms]
        return bool(events) and hidden_work(statistics.median(events), statistics.median(walls))

    def candidate_ms(self) -> list[list[float]]:
        """The candidate's milliseconds per call, block by block, by the clock that counts."""
        hidden = self.hidden_work
        return [block.wall_ms if hidden else block.event_ms for block in self.candidate]

    def round_ratios(self, name: str) -> list[float]:
        """Per round: the baseline's block median over the candidate's."""
        return [statistics.median(b.event_ms) / statistics.median(c)
                for b, c in zip(self.baselines[name], self.candidate_ms(), strict=True)]

    def speedup(self, name: str) -> Interval:
        return median_interval(self.round_ratios(name)).widened(self.between_evaluations)

    def order_effect(self, name: str) -> float | None:
        """How much higher the baseline's ratio reads in rounds that time the candidate first (the baseline
        right after it) than in rounds that time it last, relative; None below two rounds of each. Near
        zero when neither side leaves anything behind that slows the other."""
        return order_effect(self.round_ratios(name))

    def precise(self, precision: float) -> bool:
        """Every baseline's interval from this window's rounds (the candidate's own time when there is no
        baseline) within ``precision``. The between-evaluations term is left out: no round shrinks it."""
        if self.baselines:
            return all(median_interval(self.round_ratios(name)).half_width <= precision
                       for name in self.baselines)
        return median_interval([statistics.median(c) for c in self.candidate_ms()]).half_width <= precision


def order_effect(ratios: Sequence[float]) -> float | None:
    """How much higher the ratios of even rounds (the candidate timed first) read than those of odd ones,
    relative; None below two rounds of each."""
    first, last = ratios[0::2], ratios[1::2]
    if len(first) < 2 or len(last) < 2:
        return None
    return statistics.median(first) / statistics.median(last) - 1.0


def block_length(settings: PairedTiming, call_ms: Mapping[str, float | None]) -> int:
    """``settings.block_calls``, shortened (to one call at least) so that ``min_rounds`` rounds of every
    side fit in the budget: a call of seconds is timed a few times, not for minutes."""
    round_ms = sum(ms or 0.0 for ms in call_ms.values())
    if round_ms <= 0:
        return settings.block_calls
    fitting = int(settings.budget_seconds * 1e3 / (settings.min_rounds * round_ms))
    return max(1, min(settings.block_calls, fitting))


def run_rounds(candidate: TimeBlock, baselines: Mapping[str, TimeBlock], settings: PairedTiming, *,
               warmup_calls: int, max_rounds: int | None = None,
               clock: Callable[[], float] = time.perf_counter,
               after_block: Callable[[], None] = lambda: None,
               trace: TraceBlock | None = None) -> PairedOutcome:
    """Warm every side up, then time rounds until the stop rule ends them.

    The candidate warms up first, for a time (the GPU's clocks settle), then each baseline for
    ``warmup_calls``, then ``settings.settling_rounds`` rounds are timed and thrown away (``_settle``). A
    baseline whose block raises ``BaselineFailed`` is left out from then on, with its reason; any other
    exception, and any from the candidate, ends the window (the caller's verdict).
    ``after_block`` runs after every block (the machine's state is sampled there). With ``trace``, rounds
    drawn by ``TraceSample`` (settings.traced_blocks, settings.trace_seed) also run a traced block of the
    candidate on the round's inputs; its seconds are left out of the budget.
    """
    max_rounds = settings.max_rounds if max_rounds is None else max_rounds
    outcome = PairedOutcome(baselines={name: [] for name in baselines},
                            between_evaluations=settings.between_evaluations)
    sample = TraceSample(settings.traced_blocks if trace else 0, settings.min_rounds, settings.trace_seed)
    sides: dict[str, TimeBlock] = dict(baselines)
    call_ms: dict[str, float | None] = {}
    _, call_ms[""] = candidate(0, warmup_calls, WARMUP_SECONDS, 0)
    for name in list(sides):
        if (warmed := _baseline_block(outcome, sides, name, 0, warmup_calls, 0.0, 0)) is not None:
            call_ms[name] = warmed[1]
    outcome.block_calls = block = block_length(settings, call_ms)
    if block == settings.block_calls:
        _settle(candidate, sides, outcome, block, settings.settling_rounds)

    def traced(index: int) -> float:
        assert trace is not None
        seconds = trace(block, index * block, index)
        outcome.traced.append(TracedBlock(index, block, seconds))
        return seconds

    started, traced_seconds = clock(), 0.0
    while True:
        index = outcome.rounds
        order = _order(index, sides)
        side_of_trace = sample.draw()
        round_started, round_traced = clock(), 0.0
        for name in order:
            if name == "":
                if side_of_trace == "before":
                    round_traced += traced(index)
                outcome.candidate.append(candidate(block, 0, 0.0, index * block)[0])
                if side_of_trace == "after":
                    round_traced += traced(index)
            elif name in sides:
                if (timed := _baseline_block(outcome, sides, name, block, 0, 0.0, index * block)) is not None:
                    outcome.baselines[name].append(timed[0])
            after_block()
        now = clock()
        traced_seconds += round_traced
        if outcome.rounds >= settings.min_rounds and outcome.precise(settings.precision):
            outcome.ended_by = "precision"
            break
        spent = now - started - traced_seconds + (now - round_started - round_traced)
        if outcome.rounds >= max_rounds or (outcome.rounds >= MIN_ROUNDS and spent > settings.budget_seconds):
            outcome.ended_by = "budget"
            break
    for extra in range(sample.missing(len(outcome.traced))):
        traced(outcome.rounds + extra)
    return outcome


def _settle(candidate: TimeBlock, sides: dict[str, TimeBlock], outcome: PairedOutcome, block: int,
            rounds: int) -> None:
    """``rounds`` rounds timed and thrown away before the first that counts, each in the order and on the
    inputs of the counted round with its index (candidate first in even ones), so it is timed as one.

    On the H200 the candidate's first block after the baselines' warm-up read 10-15% slow in every window
    of an 8192-size GEMM (five processes, and both ptx GEMMs: docs/benchmarks.md, 2026-12-03 17:24), while
    the baseline's block right after it did not; with few rounds that one round set the interval's low end.
    Run only when blocks are full length: a call too slow for them has warmed up long enough."""
    for index in range(rounds):
        for name in _order(index, sides):
            if name == "":
                candidate(block, 0, 0.0, index * block)
            elif name in sides:
                _baseline_block(outcome, sides, name, block, 0, 0.0, index * block)
        outcome.settling_rounds += 1


def _order(index: int, sides: Mapping[str, TimeBlock]) -> list[str]:
    """The sides of round ``index`` in the order they run ("" the candidate): the candidate first in even
    rounds, last (after the baselines reversed) in odd ones, so neither side always runs first."""
    return ["", *sides] if index % 2 == 0 else [*reversed(sides), ""]


def _baseline_block(outcome: PairedOutcome, sides: dict[str, TimeBlock], name: str, calls: int,
                    warmup_calls: int, warmup_seconds: float, start: int
                    ) -> tuple[Calls, float | None] | None:
    """A baseline's block, or None when it raised ``BaselineFailed``: it is then left out, with its reason."""
    try:
        return sides[name](calls, warmup_calls, warmup_seconds, start)
    except BaselineFailed as exc:
        _drop(outcome, sides, name, exc)
        return None


def _drop(outcome: PairedOutcome, sides: dict[str, TimeBlock], name: str, exc: BaselineFailed) -> None:
    sides.pop(name, None)
    outcome.baselines.pop(name, None)
    outcome.failed[name] = str(exc)[:300]
