"""Which of a timing window's blocks run under CUDA activity tracing: a sample the candidate cannot predict.

Every checked call is traced (env/worker/device_trace.py), and timed calls are not, since tracing slows
each call down. A candidate that tells the two apart (by its inputs recurring, its call count, the pace of
the loop) could compute honestly when checked and reach a library when timed. So some of the candidate's
timed blocks are traced too, at rounds the judge draws here from a seed the worker never holds: the
request that asks for a traced block arrives only when that block runs, and it runs the same loop, on the
same staged inputs, as every timed block. The traced block is an extra one beside the round's timed block
(before or after it, drawn too): its times are evidence, never samples, so the tracer's overhead changes
no figure.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

TraceBlock = Callable[[int, int, int], float]
"""``(calls, start, round) -> seconds``: ``calls`` of the candidate from rotation position ``start``,
traced; returns the seconds the block took, tracing included."""


@dataclass
class TracedBlock:
    round: int
    """The 0-based round it ran beside; from the window's round count on, one traced after the last round."""
    calls: int
    seconds: float


class TraceSample:
    """Per round, whether a traced block runs and on which side of the timed one: each round with
    probability ``blocks / min_rounds``, so that a window that ends by precision traces ``blocks`` on
    average and a longer window keeps tracing at the same rate."""

    def __init__(self, blocks: int, min_rounds: int, seed: int | None = None) -> None:
        self.blocks = blocks
        self.rate = min(1.0, blocks / min_rounds) if blocks > 0 else 0.0
        self._rng = random.Random(secrets.randbits(64) if seed is None else seed)

    def draw(self) -> Literal["before", "after"] | None:
        if self.rate == 0.0 or self._rng.random() >= self.rate:
            return None
        return "before" if self._rng.random() < 0.5 else "after"

    def missing(self, traced: int) -> int:
        """Traced blocks still owed once the rounds are over: every window traces ``blocks`` at least."""
        return max(0, self.blocks - traced)
