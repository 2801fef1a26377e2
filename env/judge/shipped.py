"""What the judge sends with a request for a task the worker cannot rebuild: an imported problem's inputs
(its input builder is the user's file, which runs in the judge only) and its model's constructor arguments
and parameters (``protocol.messages.ModelCall``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warpgym.env.protocol import messages as m
from warpgym.tasks import Sampler, case_label

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

TIMING_INPUT_BYTES = 1 << 30
"""Timing rotates three input sets; past this size one set is sent (sending several gigabytes three
times costs more than the timing)."""


def model_call(ev: Evaluation, case: dict[str, Any]) -> m.ModelCall | None:
    model = ev.task.model
    if model is None:
        return None
    return m.ModelCall(
        key=case_label(case) or "own sizes",
        init_inputs=list(model.init_inputs(case)),
        state=model.state(case),
    )


def run_fields(ev: Evaluation, case: dict[str, Any], seed: int, distribution: str) -> dict[str, Any]:
    """Extra ``RunRequest`` fields: none for our own tasks."""
    if ev.task.model is None:
        return {}
    inputs = ev.task.make_inputs(case, Sampler(seed, distribution, ev.device))
    return {"inputs": inputs, "model": model_call(ev, case)}


def time_fields(ev: Evaluation, case: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """Extra ``TimeRequest`` fields: the input sets the timing loop rotates through, and the model."""
    if ev.task.model is None:
        return {}
    import torch

    sets = []
    for seed in seeds:
        sets.append(ev.task.make_inputs(case, Sampler(seed, ev.task.distributions[0], ev.device)))
        size = sum(v.numel() * v.element_size() for v in sets[0].values() if isinstance(v, torch.Tensor))
        if size > TIMING_INPUT_BYTES:
            break
    return {"input_sets": sets, "model": model_call(ev, case)}
