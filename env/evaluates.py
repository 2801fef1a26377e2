"""What the environment needs from whatever judges its candidates.

The ``Evaluator`` judges on this host; the experiment runner puts its pool (a verdict cache over
local evaluators or Ray actors) in the same place. Anything with this shape can stand behind a
``KernelEnv``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from warpgym.env.candidate import Candidate
    from warpgym.env.judge.evaluator import EvalOptions
    from warpgym.env.judge.result import EvalResult
    from warpgym.tasks import Task


class Evaluates(Protocol):
    """Judges one candidate (a module's source, or a ``Candidate`` with attachments) for a task."""

    def evaluate(self, task: Task, candidate: str | Candidate, options: EvalOptions, /) -> EvalResult: ...

    def close(self) -> None:
        """Release the worker processes (or whatever else judging holds)."""
