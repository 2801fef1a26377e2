"""The evaluator: worker processes and caches that make repeat evaluations cheap, lent to one
``Evaluation`` per candidate.

An evaluation holds all of its own state, so one evaluator serves several threads at once: each
evaluation is lent a pair of workers no other evaluation uses meanwhile (the evaluator's own pair,
or a spare one started for a thread that found it busy and kept for the next).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from warpgym.env.candidate import Candidate
from warpgym.env.common.device import resolve_device
from warpgym.env.judge.evaluation import Caches, Evaluation, Workers
from warpgym.env.judge.options import EvalOptions, Limits
from warpgym.env.judge.pool import Worker
from warpgym.env.judge.references import Reference, References
from warpgym.env.judge.result import EvalResult
from warpgym.tasks import Task

__all__ = ["EvalOptions", "Evaluator", "Limits", "evaluate"]


class Evaluator:
    """Judges candidates; holds the workers and the caches that make repeat evaluations cheap."""

    def __init__(self, device: str = "auto") -> None:
        self.device = resolve_device(device)
        self.run_worker = Worker(self.device, mode="run")
        self.compile_worker = Worker("cpu", mode="compile")
        self.caches = Caches(References(self.device))
        self._lock = threading.Lock()
        self._busy = False
        self._spares: list[Workers] = []

    def close(self) -> None:
        self.run_worker.stop()
        self.compile_worker.stop()
        with self._lock:
            spares, self._spares = self._spares, []
        for workers in spares:
            workers.run.stop()
            workers.compile.stop()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _lend(self) -> Iterator[Workers]:
        """Workers for one evaluation, used by no other until it ends."""
        with self._lock:
            own = not self._busy
            if own:
                self._busy = True
            else:
                spare = self._spares.pop() if self._spares else \
                    Workers(Worker(self.device, mode="run"), Worker("cpu", mode="compile"))
        try:
            yield Workers(self.run_worker, self.compile_worker) if own else spare
        finally:
            with self._lock:
                if own:
                    self._busy = False
                else:
                    self._spares.append(spare)

    def reference(self, task: Task, case: dict[str, Any], seed: int, dist: str) -> Reference:
        """Expected outputs (in high precision) and their expected shapes/dtypes (meta tensors)."""
        return self.caches.references.get(task, case, seed, dist)

    def evaluation(self, task: Task, candidate: Candidate | str, options: EvalOptions | None = None,
                   workers: Workers | None = None) -> Evaluation:
        """An evaluation of ``candidate`` on ``workers`` (by default this evaluator's own), not yet run."""
        return Evaluation(task, Candidate.of(candidate), options or EvalOptions(), self.device,
                          workers or Workers(self.run_worker, self.compile_worker), self.caches)

    def evaluate(self, task: Task, candidate: Candidate | str, options: EvalOptions | None = None
                 ) -> EvalResult:
        """The verdict on ``candidate`` (a module's source, or a ``Candidate`` with attachments)."""
        # Checked again, even for a Candidate: a bad attachment is refused here, before any worker starts.
        candidate = Candidate.of(candidate)
        candidate = Candidate(candidate.source, dict(candidate.attachments))
        with self._lend() as workers:
            return self.evaluation(task, candidate, options, workers).evaluate()


def evaluate(task: Task, candidate: Candidate | str, options: EvalOptions | None = None,
             evaluator: Evaluator | None = None) -> EvalResult:
    """Judge one candidate; a throwaway Evaluator is made (and closed) when none is given."""
    candidate = Candidate.of(candidate)
    options = options or EvalOptions()
    own = evaluator is None
    evaluator = evaluator or Evaluator(options.device)
    try:
        return evaluator.evaluate(task, candidate, options)
    finally:
        if own:
            evaluator.close()
