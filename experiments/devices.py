"""Which devices a local run evaluates on: one entry per evaluation worker."""

from __future__ import annotations

import os

from .config import Experiment
from .rundir import RunError


def resolve_devices(exp: Experiment) -> list[str]:
    """One entry per local evaluation worker: each GPU ``workers_per_gpu`` times (interleaved, so work
    spreads over the GPUs first), or ``workers`` CPU entries. Empty for the Ray executor, whose
    cluster decides (checked when it starts)."""
    import torch

    if exp.run.executor == "ray":
        return []
    devices = exp.run.devices
    per_gpu = exp.run.workers_per_gpu
    cpu_workers = exp.run.workers or max(1, min(4, (os.cpu_count() or 2) // 2))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if devices == "auto":
        devices = "cuda" if gpus else "cpu"
    if devices == "cpu":
        return ["cpu"] * cpu_workers
    if devices == "cuda":
        if not gpus:
            raise RunError('devices = "cuda" but no CUDA GPU is visible here; use "cpu" or "auto"')
        return [f"cuda:{i}" for _ in range(per_gpu) for i in range(gpus)]
    assert isinstance(devices, list)
    for d in devices:
        if d.startswith("cuda") and (not gpus or (":" in d and int(d.split(":")[1]) >= gpus)):
            raise RunError(f"device {d} is not visible here ({gpus} GPUs)")
    listed = ["cpu" if d == "auto" else d for d in devices]
    return [d for _ in range(per_gpu) for d in listed if d.startswith("cuda")] + [
        d for d in listed if not d.startswith("cuda")
    ]
