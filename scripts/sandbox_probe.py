"""Which sandbox layers a CUDA worker survives (run on a GPU machine).

Starts one worker per configuration (every layer off, each layer alone, all defaults) and asks
it to judge the math/add reference on the GPU. Prints one line per configuration and writes
JSON under $OUT; the layers that break CUDA are the ones to leave off for GPU workers.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kernelgym.env import EvalOptions, Evaluator
from kernelgym.env.pool import Worker
from kernelgym.env.sandbox import defaults
from kernelgym.tasks import get_task

LAYERS = ("network", "landlock", "mount", "cgroup", "drop_uid", "audit")


def attempt(overrides: dict | bool) -> dict:
    task = get_task("math/add")
    evaluator = Evaluator("cuda")
    evaluator.run_worker = Worker("cuda", sandbox=overrides)
    started = time.perf_counter()
    try:
        result = evaluator.evaluate(task, task.solution_source(), EvalOptions(device="cuda", timing=False))
        report = evaluator.run_worker.sandbox_report or {}
        return {"correct": result.correct, "seconds": round(time.perf_counter() - started, 1),
                "error": (result.runtime_error or "")[-300:] or None,
                "applied": report.get("applied"), "not_applied": report.get("not_applied")}
    except Exception as exc:  # noqa: BLE001 - a failing layer is the answer we are after
        return {"correct": False, "error": f"{type(exc).__name__}: {exc}"[-300:]}
    finally:
        evaluator.close()


def main() -> None:
    configs: dict[str, dict | bool] = {"defaults": True, "none": False}
    everything_off = {layer: False for layer in LAYERS}
    for layer in LAYERS:
        configs[layer] = {**everything_off, layer: True}
    results = {}
    for name, cfg in configs.items():
        results[name] = r = attempt(cfg)
        print(f"{name:10s} correct={r['correct']!s:5s} {r.get('seconds', '-')}s {r.get('error') or ''}", flush=True)
    print("defaults:", json.dumps(defaults("cuda", "run")))
    out = Path(os.environ.get("OUT", ".")) / "sandbox_probe.json"
    out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
