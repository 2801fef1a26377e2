"""Baseline times (PyTorch eager, torch.compile, the vendor library) for a bench case, measured once per
device and kept in memory and on disk, keyed by everything that would change the figure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from warpgym.env.judge.cache import code_fingerprint, environment_fingerprint, fingerprint
from warpgym.tasks import Sampler

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation


def times(ev: Evaluation, case: dict[str, Any], alone: bool = True) -> dict[str, float]:
    """Median milliseconds of each baseline; a baseline that fails is left out (and not cached). Out of
    memory while another bench phase shares the GPU is ``bench.SharedOutOfMemory``: run again alone."""
    from warpgym.env.common.timing import time_callable
    from warpgym.env.judge.bench import SharedOutOfMemory

    task, options, caches = ev.task, ev.options, ev.caches
    key = (task.id, tuple(sorted(case.items())), ev.device)
    kept = caches.baselines.get(key)
    if kept is not None:
        return kept
    disk_key = fingerprint(task.id, code_fingerprint(task.reference, task.vendor, task.make_inputs),
                           task.model.source if task.model is not None else None, case,
                           task.baselines, environment_fingerprint(ev.device), options.warmup, options.reps)
    cached = caches.baseline_disk.get(disk_key)
    if cached is not None:
        caches.baselines.put(key, cached)
        return cached
    inputs = [task.make_inputs(case, Sampler(seed, "normal", ev.device)) for seed in (0, 1, 2)]
    fns: dict[str, Any] = {}
    if "eager" in task.baselines:
        fns["eager"] = task.reference_of(case)
    if "torch.compile" in task.baselines:
        fns["torch.compile"] = torch.compile(own_code(task.reference_of(case)))
    if task.vendor is not None:
        fns["vendor"] = task.vendor
    measured = {}
    with torch.no_grad():
        for name, fn in fns.items():
            try:
                stats = time_callable(fn, inputs, warmup=options.warmup, reps=options.reps)
                measured[name] = stats["median_ms"]
            except Exception as exc:  # noqa: BLE001 - a baseline that fails is left out, and said
                if isinstance(exc, torch.OutOfMemoryError) and not alone:
                    raise SharedOutOfMemory from None
                measured[f"{name} (failed: {type(exc).__name__})"] = float("nan")
    kept = {k: v for k, v in measured.items() if v == v}
    caches.baselines.put(key, kept)
    if all(v == v for v in measured.values()):
        caches.baseline_disk.put(disk_key, kept)
    return kept


def own_code(fn: Any) -> Any:
    """``fn`` behind a wrapper with a code object of its own. Dynamo caches compiled graphs per code
    object, and tasks declared in a loop share one reference lambda: after eight tasks or dtypes its
    recompile limit was hit and "torch.compile" silently timed eager code."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    call.__code__ = call.__code__.replace()
    return call
