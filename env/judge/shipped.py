"""What the judge sends for a module-class candidate (an imported problem's ``ModelNew``): the problem's
constructor arguments and its reference model's parameters for a case (``protocol.messages.ModelCall``).

The problem file runs here only: the worker gets these values and the inputs, never the file, its path or
its ``Model``. The parameters go once per case after each load of the candidate; later calls of that case
name the instance the worker built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warpgym.env.protocol import messages as m
from warpgym.tasks import case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation


def model_key(case: dict[str, Any]) -> str:
    return case_label(case) or "own sizes"


def model_call(ev: Evaluation, case: dict[str, Any], fresh: bool = False) -> m.ModelCall | None:
    """The instance of ``case`` to call in the run worker (``fresh``: with the parameters, for a worker of
    its own, such as a profiler's); None for a function candidate."""
    model = ev.task.model
    if model is None:
        return None
    key = model_key(case)
    if key in ev.models_sent and not fresh:
        return m.ModelCall(key=key)
    if not fresh:
        ev.models_sent.add(key)
    return m.ModelCall(key=key, init_inputs=list(model.init_inputs(case)), state=model.state(case))
