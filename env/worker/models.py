"""Candidates that are module classes (an imported problem's ``ModelNew``): built in the worker with the
problem's constructor arguments, given the reference model's parameters by name, then called.

Construction is plumbing (layers allocate their own parameters, then get overwritten); loading the
parameters runs under the run-time policy, so a candidate that computes on them while they load (an
overridden ``load_state_dict`` or hook) is seen like one that computes in ``forward``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import torch
from warpgym.env.protocol import messages as m
from warpgym.env.worker import policy


class ModelBuildError(Exception):
    """The candidate's class could not be built or given the reference's parameters: the message says why."""


def check_class(entry: Any, params: list[str], name: str) -> str | None:
    """Why ``entry`` is not a module class whose forward takes ``params``, or None."""
    import inspect

    if not (isinstance(entry, type) and issubclass(entry, torch.nn.Module)):
        return f"{name} is not a class derived from torch.nn.Module"
    try:
        found = [p for p in inspect.signature(entry.forward).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return None
    got = [p.name for p in found]
    if got[: len(params)] != params and not any(p.kind is p.VAR_POSITIONAL for p in found):
        return f"{name}.forward({', '.join(got)}) does not take the problem's inputs ({', '.join(params)})"
    return None


def build(
    cls: type[torch.nn.Module], call: m.ModelCall, device: str
) -> tuple[torch.nn.Module, dict[str, int]]:
    """An instance for ``call`` on ``device`` and the ops the policy refused while its parameters loaded.

    The constructor runs outside the policy (PyTorch's own initialisers compute) under a seed of its own, not
    the reference's: its parameters are replaced by the reference's when they load, so nothing it derives
    from them in the constructor (a bias folded in advance, kept as a plain attribute) can match them. A
    constructor that seeds the generator itself is refused."""
    seed = secrets.randbits(63)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = cls(*call.init_inputs)
            reseeded = torch.initial_seed() != seed
    except BaseException as exc:  # noqa: BLE001 - the candidate's constructor failing is the answer
        raise ModelBuildError(
            f"building the model with the problem's constructor arguments "
            f"{call.init_inputs!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    if reseeded:
        raise ModelBuildError(
            "the model's constructor seeded PyTorch's random generator: the reference's parameters are drawn "
            "from a known seed, so a constructor that reseeds could rebuild them and compute on them unseen"
        )
    mine = set(model.state_dict())
    missing, extra = sorted(set(call.state) - mine), sorted(mine - set(call.state))
    if missing or extra:
        raise ModelBuildError(
            "the model's parameters and buffers must have the reference Model's names, since its values are "
            "copied by name: "
            + "; ".join(
                p
                for p in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"not in Model: {', '.join(extra)}" if extra else "",
                )
                if p
            )
        )
    with policy.watching() as mode:
        try:
            model.load_state_dict(call.state, strict=True)
            model = model.to(device)
        except BaseException as exc:  # noqa: BLE001
            raise ModelBuildError(
                f"loading the reference's parameters failed: {type(exc).__name__}: {exc}"
            ) from exc
    return model, mode.forbidden()


def bound(model: torch.nn.Module, params: list[str]) -> Callable[..., Any]:
    """The model as an entrypoint: keyword inputs in, its forward's positional order."""

    def forward(**inputs: Any) -> Any:
        with torch.no_grad():
            return model(*[inputs[p] for p in params if p in inputs])

    return forward


def on_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    """The judge's inputs (CPU tensors off the wire) on the worker's device, each its own storage."""
    return {k: v.to(device, copy=True) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
