"""Verdicts remembered for the length of a run, so a candidate seen twice is judged once.

Models repeat themselves (the same kernel after a fix that changed only prose, two samples that
agree), and an evaluation costs seconds while the verdict is a pure function of what was judged
and how. The key is everything the verdict depends on; callers get copies, so an episode that
edits its verdict cannot change another's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from warpgym.env import EvalOptions, EvalResult
    from warpgym.env.candidate import Candidate
    from warpgym.tasks import Task


def verdict_key(task: Task, candidate: str | Candidate, options: EvalOptions) -> str:
    """What the verdict depends on: the task (its id and ``task_fingerprint``: two suites may share an id,
    and a task may be edited under one version), the module and its attachments, and every option (target,
    device, shape sets, timing and its warm-up and repetitions, the paired timing with its traced sample,
    limits, profiling, memcheck, what feedback reveals, the root of the inputs). The reward is not: the
    environment computes it from the verdict, outside this cache, so episodes with different reward
    settings share a verdict.

    A root the user chose (``input_seed``) is part of the key, so two roots never share a verdict. Without
    one, each evaluation draws its own root and the first verdict (with its root) answers for the same
    module again, as the trace sample's does: a module resubmitted verbatim cannot know the inputs that
    judged it, and judging it again would only redraw its luck."""
    if isinstance(candidate, str):
        judged: object = candidate
    else:
        judged = [candidate.source, sorted(candidate.attachments.items())]
    from warpgym.tasks.fingerprint import task_fingerprint

    blob = json.dumps([task.id, task_fingerprint(task), judged, dataclasses.asdict(options)], sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class VerdictCache:
    """Verdicts by ``verdict_key``; the same key asked for twice at once is computed once."""

    def __init__(self) -> None:
        self.verdicts: dict[str, EvalResult] = {}
        self.lock = threading.Lock()
        self.key_locks: dict[str, threading.Lock] = {}
        self.hits = 0

    def get(self, key: str, compute: Callable[[], EvalResult]) -> EvalResult:
        with self.lock:
            key_lock = self.key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self.lock:
                if key in self.verdicts:
                    self.hits += 1
                    return _copy(self.verdicts[key])
            result = compute()
            with self.lock:
                self.verdicts[key] = result
            return _copy(result)


def _copy(result: EvalResult) -> EvalResult:
    from warpgym.env import EvalResult

    return EvalResult.from_dict(result.to_dict())
