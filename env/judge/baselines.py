"""The baselines a candidate is timed against (PyTorch eager, torch.compile, the vendor library), as
sides of the paired timing window (judge/paired.py): timed in the judge's process, in blocks between
the worker's blocks of the candidate, on the same GPU, with the same L2 flush before every call.

Nothing is cached: a baseline timed at another moment ran at another clock, and dividing by it is
what made ratios move from one evaluation to the next.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from warpgym.env.common.timing import L2_FLUSH_BYTES, Calls, gpu_lock, time_calls, warm_up
from warpgym.env.judge.paired import BaselineFailed, TimeBlock
from warpgym.env.judge.seeds import InputSeeds, draw_root
from warpgym.tasks import Task

SEEDS = (0, 1, 2)
"""The roles of the input sets both sides rotate over (the judge draws the candidate's, sent to the worker,
from the same derived seeds: judge/seeds.py)."""
ONE_SET_BYTES = 2 << 30
"""A bench case moving more than this is timed on one input set: every call streams from DRAM whatever
its inputs, and three sets would triple the copies to the worker and the GPU memory held. Rotation does not
defend against answers cached by input (the sets recur either way); fresh checked calls and the traced
timed blocks do."""


def seeds_for(task: Task, case: dict[str, Any]) -> tuple[int, ...]:
    """The input sets a bench case is timed on, both sides alike."""
    try:
        moved = int(task.bytes(case))
    except Exception:  # noqa: BLE001 - a task without a byte count rotates as usual
        return SEEDS
    return SEEDS[:1] if moved > ONE_SET_BYTES else SEEDS


def callables(task: Task, case: dict[str, Any] | None = None) -> dict[str, Callable[..., Any]]:
    """The task's baselines by name at ``case`` (an imported problem's reference is its model built for the
    case). A task judged by its own check (its reference only allocates) has none, so it is never timed
    against a placeholder."""
    fns: dict[str, Callable[..., Any]] = {}
    reference = task.reference if case is None else task.reference_of(case)
    if "eager" in task.baselines:
        fns["eager"] = reference
    if "torch.compile" in task.baselines:
        fns["torch.compile"] = torch.compile(own_code(reference))
    if task.vendor is not None:
        fns["vendor"] = task.vendor
    return fns


class Baselines:
    """One bench case's baselines with their inputs, ready to be timed block by block."""

    def __init__(self, task: Task, case: dict[str, Any], device: str, *, alone: bool,
                 out_of_memory: Callable[[], Exception], seeds: InputSeeds | None = None) -> None:
        self.task, self.case = task, case
        self.seeds = seeds or InputSeeds(draw_root())
        """The evaluation's: the baselines run on the candidate's very inputs."""
        self.fns: dict[str, Callable[..., Any]] = {}
        self.inputs: Sequence[dict[str, Any]] = []
        self.device = device
        self.alone = alone
        self.out_of_memory = out_of_memory
        self.errors: dict[str, str] = {}
        self.flush: torch.Tensor | None = None
        self.spins: dict[int, int] = {}
        """Per baseline callable, the spin its last block ended with (common/timing.time_calls)."""

    def prepare(self) -> None:
        """The baselines and their inputs (made only now, after the candidate's first call, which may
        fail: importing torch.compile alone takes seconds), then the first call of each (torch.compile
        compiles there): a baseline that fails is left out, with the reason."""
        self.fns = callables(self.task, self.case)
        if self.fns:
            self.inputs = [self.task.make_inputs(self.case, self.seeds.sampler(seed, "normal", self.device,
                                                                              "timing"))
                           for seed in seeds_for(self.task, self.case)]
        for name, fn in list(self.fns.items()):
            try:
                with torch.no_grad(), gpu_lock(shared=True):
                    fn(**self.inputs[0])
                    torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a baseline that fails is left out, and said
                self._failed(name, exc)

    def sides(self) -> dict[str, TimeBlock]:
        return {name: self._side(name) for name in self.fns}

    def _side(self, name: str) -> TimeBlock:
        fn = self.fns[name]

        def side(calls: int, warmup_calls: int, warmup_seconds: float, start: int
                 ) -> tuple[Calls, float | None]:
            try:
                with torch.no_grad():
                    return self._block(fn, calls, warmup_calls, warmup_seconds, start)
            except Exception as exc:  # noqa: BLE001 - as in prepare
                self._failed(name, exc)
                raise BaselineFailed(self.errors[name]) from None

        return side

    def _block(self, fn: Callable[..., Any], calls: int, warmup_calls: int, warmup_seconds: float,
               start: int) -> tuple[Calls, float | None]:
        began = time.perf_counter()
        warmed = warm_up(fn, self.inputs, warmup_calls, warmup_seconds, torch.cuda.synchronize)
        call_ms = (time.perf_counter() - began) * 1e3 / warmed if warmed else None
        if not calls:
            return Calls(), call_ms
        if self.flush is None:
            self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=self.device)
        timed = time_calls(fn, self.inputs, calls, event_cls=torch.cuda.Event,
                           synchronize=torch.cuda.synchronize, flush=self.flush, start=start,
                           spin_cycles=self.spins.get(id(fn), 0))
        self.spins[id(fn)] = timed.spin_cycles
        return timed, call_ms

    def _failed(self, name: str, exc: Exception) -> None:
        if isinstance(exc, torch.OutOfMemoryError) and not self.alone:
            raise self.out_of_memory() from None
        self.fns.pop(name, None)
        self.errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"

    def close(self) -> None:
        self.inputs, self.flush = [], None


def own_code(fn: Any) -> Any:
    """``fn`` behind a wrapper with a code object of its own. Dynamo caches compiled graphs per code
    object, and tasks declared in a loop share one reference lambda: after eight tasks or dtypes its
    recompile limit was hit and "torch.compile" silently timed eager code."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    call.__code__ = call.__code__.replace()
    return call
