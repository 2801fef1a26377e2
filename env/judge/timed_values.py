"""Timed calls' answers, sampled: a few timed calls' outputs are read, and the judge sets them, at secret
positions, against what those calls' inputs must give.

A timed call's outputs are otherwise never read. A candidate that recognises the recurring timed inputs
could compute less there and answer wrongly (skip a tail of rows, drop to a lower precision), as long as
its timed calls still take most of the time its work takes (the timed work rule, judge/timed_evidence.py,
lets through up to a third less). Here each timed block of a window is sampled with the same probability,
drawn from a seed the worker never holds; a window that ends without one samples an extra block after its
last round, which the worker cannot tell from a round's. The request names the sampled call and the
positions only in the block it samples, as a traced block's does (judge/timed_trace.py); the worker reads
that call's outputs as soon as it is done, before the next call starts (a later call that finished an
earlier output only while it was still held would otherwise repair the sample), and sends their values
back with the block. A value outside the task's element-wise tolerance fails the candidate
(``timed-wrong-answer``), and its speedup is withdrawn. A task judged by a check of its own (a random op)
has no reference answer; one seed gives it one output, so its sampled values must be those of a checked call
on the same inputs, whose output passes the check.

What it leaves: the read makes the pause before the next call a little longer, so that call could tell
that its predecessor was sampled, after its values were taken. A timed answer kept from an earlier call on
the same inputs is right, so no value shows it: the timed work rule bounds what it saves.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from warpgym.env.common.bits import flat_positions, take_bits
from warpgym.env.judge.baselines import seeds_for
from warpgym.env.judge.compare import compare_outputs
from warpgym.env.judge.plan import Check
from warpgym.env.protocol import messages as m
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

POSITIONS = 1024
"""Elements read from each output of a sampled call."""
ALLOWED_MISMATCHES = 2
"""Sampled elements of one output that may fall outside the tolerance. The timed inputs are drawn from the
normal distribution at bench size, where a few fp16 outputs in 1e8 cancel past any element-wise bound
(env/judge/plan.py, BENCH_DISTRIBUTION): a sample lands on one of those rarely, and two are allowed. A wrong
answer on 1% of the elements gives 10 on average, more than 2 with probability 0.998."""


@dataclass
class SampledCall:
    staged: int
    """The staged input set the call ran on (its position in the rotation, modulo the sets)."""
    call: int
    at: list[float]
    outputs: list[m.SampledOutput] | None = None
    error: str | None = None


@dataclass
class ValueSample:
    """Which of a window's timed blocks keep a call's outputs: each with probability ``1 / min_rounds``, at
    most ``most`` of them, at least one (``owed``); every sampled call after the first runs on the first's
    staged input set, so the judge draws one reference per bench case."""

    most: int
    min_rounds: int
    seed: int | None = None
    taken: list[SampledCall] = field(default_factory=list)
    force: bool = False
    """The next block with calls is sampled whatever the draw (the one owed after the rounds)."""

    def __post_init__(self) -> None:
        self._rng = random.Random(secrets.randbits(64) if self.seed is None else self.seed)

    @property
    def owed(self) -> bool:
        """No block of the window was sampled yet (the caller then runs one more, sampled)."""
        return self.most > 0 and not self.taken

    def fields(self, calls: int, start: int, sets: int) -> dict[str, Any]:
        """The sample's fields of the next timed block's request (``calls`` from rotation position ``start``
        over ``sets`` staged sets): empty for a block that is not sampled. A draw is made for every block, so
        the sequence of draws does not depend on the calls the blocks hold."""
        drawn = self._rng.random() < 1.0 / max(1, self.min_rounds)
        call_fraction = self._rng.random()
        if not calls or len(self.taken) >= self.most or not (drawn or self.force):
            return {}
        self.force = False
        sets = max(1, sets)
        # After the first, a sampled call runs on the first's input set: one reference per bench case.
        choices = [c for c in range(calls) if not self.taken or (start + c) % sets == self.taken[0].staged]
        choices = choices or list(range(calls))
        call = choices[int(call_fraction * len(choices))]
        at = [self._rng.random() for _ in range(POSITIONS)]
        self.taken.append(SampledCall(staged=(start + call) % sets, call=call, at=at))
        return {"sample_call": call, "sample_at": at}

    def record(self, reply: m.TimeBlockReply) -> None:
        """The reply of the block ``fields`` sampled last: its outputs' values, or why they were not read."""
        taken = self.taken[-1]
        taken.outputs, taken.error = reply.sample, reply.sample_error
        if reply.sample is None and reply.sample_error is None:
            taken.error = "the worker sent no values for the sampled call"


def judge_sample(ev: Evaluation, case: dict[str, Any], sample: ValueSample) -> dict[str, Any] | None:
    """The sampled calls set against what their inputs must give: None when nothing was sampled, else
    the calls, the elements read, the mismatches and (for a wrong answer) what was wrong."""
    if not sample.taken:
        return None
    task, roles = ev.task, seeds_for(ev.task, case)
    found: dict[str, Any] = {"calls": len(sample.taken), "elements": 0, "mismatches": 0, "message": ""}
    for staged in sorted({s.staged for s in sample.taken}):
        expected, meta, unchecked = _expected(ev, case, roles[staged % len(roles)])
        for taken in (s for s in sample.taken if s.staged == staged):
            problem = unchecked or _compare(task, taken, expected, meta, found)
            if problem and not found["message"]:
                found["message"] = f"on {case_label(case)} (call {taken.call + 1} of its block): {problem}"
        del expected
    return found


def _expected(ev: Evaluation, case: dict[str, Any], role: int) -> tuple[list[Any], list[Any], str | None]:
    """What a call on ``role``'s timing inputs must answer: the reference's outputs, or, for a task judged
    by a check of its own (a random op: no reference answer exists, and one seed gives one output, which
    the evaluator checks), the candidate's own in a checked call on the same inputs that passes the check.
    The third item says why there is nothing to compare with."""
    if ev.task.check is None:
        expected, meta = ev.references.get(ev.task, case, ev.seeds.seed(role, "timing"), "normal",
                                           ev.gpu_shared, role=role, salt=ev.seeds.salt)
        return expected, meta, None
    check = Check("bench", case, role, "normal", purpose="timing")
    reply = ev.run(check) or m.RunReply(ok=False, error="no reply")
    verdict = ev.judge(check, reply)
    if not verdict.passed:
        ev.result.cases.append(verdict)
        return [], [], f"a checked call on the same inputs fails the task's check ({verdict.message})"
    outputs = list(reply.outputs or [])
    return outputs, outputs, None


def _compare(task: Any, taken: SampledCall, expected: list[Any], meta: list[Any],
             found: dict[str, Any]) -> str | None:
    if taken.error is not None:
        return taken.error
    outputs = taken.outputs or []
    if len(outputs) != len(meta):
        return f"returned {len(outputs)} output(s); expected {len(meta)}"
    for index, (got, ref, want) in enumerate(zip(outputs, expected, meta, strict=True)):
        label = f"output {index}" if len(meta) > 1 else "output"
        if not isinstance(want, torch.Tensor):
            continue
        dtype = str(want.dtype).removeprefix("torch.")
        if got.dtype != dtype or got.numel != want.numel():
            return f"{label} has {got.numel} {got.dtype} elements; expected {want.numel()} {dtype}"
        if not got.numel:
            continue
        where = flat_positions(taken.at, got.numel)
        want_values = take_bits(ref, where)
        got_values = torch.tensor(got.values, dtype=torch.float64).to(want.dtype)
        shape = torch.empty_like(got_values, device="meta")
        fields = compare_outputs([got_values], [want_values], [shape], task)
        found["elements"] += len(got.values)
        found["mismatches"] += int(fields.get("mismatches", 0))
        if fields.get("mismatches", 0) > ALLOWED_MISMATCHES:
            first = fields.get("first_mismatch") or {}
            position = int(where[first["index"][0]]) if first.get("index") else None
            got_at, want_at = first.get("got", float("nan")), first.get("expected", float("nan"))
            return (f"{label}: {fields['mismatches']} of {len(got.values)} sampled elements outside the "
                    f"tolerance; at flat index {position}: got {got_at:.6g}, expected {want_at:.6g}")
    return None
