"""The run's evaluation pool: an executor's workers behind a verdict cache, and the evaluator an
episode's environment borrows from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import Experiment
from .devices import resolve_devices
from .executors import Executor, ExecutorError, LocalExecutor, RayExecutor
from .rundir import RunError
from .verdict_cache import VerdictCache, verdict_key

if TYPE_CHECKING:
    from warpgym.env import EvalOptions, EvalResult
    from warpgym.env.candidate import Candidate
    from warpgym.tasks import Task


def make_executor(exp: Experiment) -> Executor:
    """The run's executor (``run.executor``): evaluators on this host, or Ray actors on a cluster."""
    run = exp.run
    try:
        if run.executor == "ray":
            return RayExecutor(
                address=run.ray_address,
                devices=run.devices,
                workers=run.workers,
                workers_per_gpu=run.workers_per_gpu,
                suites=exp.suites,
            )
        return LocalExecutor(resolve_devices(exp))
    except ExecutorError as exc:
        raise RunError(str(exc)) from None


class EvaluatorPool:
    """Verdicts from an executor (see ``make_executor``), remembered for the run unless ``cache`` is off."""

    def __init__(
        self, devices: list[str] | None = None, *, cache: bool = True, executor: Executor | None = None
    ) -> None:
        self.executor = executor or LocalExecutor(devices or ["cpu"])
        self.devices = self.executor.slots
        self.kind = self.executor.kind
        self.cache = VerdictCache() if cache else None
        self.evaluations = 0

    @property
    def cache_hits(self) -> int:
        return self.cache.hits if self.cache is not None else 0

    def evaluate(self, task: Task, candidate: str | Candidate, options: EvalOptions, /) -> EvalResult:
        if self.cache is None:
            return self._evaluate(task, candidate, options)
        key = verdict_key(task, candidate, options)
        return self.cache.get(key, lambda: self._evaluate(task, candidate, options))

    def _evaluate(self, task: Task, candidate: str | Candidate, options: EvalOptions) -> EvalResult:
        self.evaluations += 1
        return self.executor.evaluate(task, candidate, options)

    def close(self) -> None:
        self.executor.close()


class PooledEvaluator:
    """What a ``KernelEnv`` sees as its evaluator: each evaluation goes to the shared pool."""

    def __init__(self, pool: EvaluatorPool) -> None:
        self.pool = pool
        self.device = pool.kind

    def evaluate(
        self, task: Task, candidate: str | Candidate, options: EvalOptions | None = None, /
    ) -> EvalResult:
        from warpgym.env import EvalOptions

        return self.pool.evaluate(task, candidate, options or EvalOptions())

    def close(self) -> None:
        """The pool outlives the episode; nothing to close here."""
