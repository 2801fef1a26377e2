"""The profilers' runner: one call of the candidate, under Nsight Compute or compute-sanitizer.

``env/judge/profile.py`` starts ``[ncu|compute-sanitizer ...] python -m warpgym.env.worker.profiled
CONFIG`` in a temporary directory holding ``candidate.py``; CONFIG (JSON) names the candidate's
path, the task, the input case, seed and distribution, and the target. The profiler sees every
kernel of this process; ``profile.py`` reads its output and decides. The line ``DONE`` printed
last tells the judge the candidate returned, whatever the profiler's exit status.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

DONE = "warpgym-driver: done"


def run(cfg: dict[str, Any]) -> None:
    """Import the candidate for the target, build the case's inputs on the GPU, call the entrypoint once."""
    import torch
    from warpgym.env.toolchain import attachments, loader
    from warpgym.tasks import Sampler, get_task

    loader.set_default_target(cfg["target"])
    with open(cfg["attachments"]) as f:
        attachments.install(json.load(f))
    spec = importlib.util.spec_from_file_location("warpgym_candidate", cfg["path"])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["warpgym_candidate"] = module
    spec.loader.exec_module(module)
    task = get_task(cfg["task"])
    inputs = task.make_inputs(cfg["case"], Sampler(cfg["seed"], cfg["distribution"], "cuda"))
    torch.cuda.synchronize()
    getattr(module, task.entrypoint)(**inputs)
    torch.cuda.synchronize()
    print(DONE)


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
