"""Which sandbox layers a CUDA worker survives (run on a GPU machine).

Starts one worker per configuration (every layer on, every layer off, each layer alone, then the
layers that passed alone together) and asks
it to judge the math/add reference on the GPU. Prints one line per configuration and writes
JSON under $OUT; the layers that break CUDA are the ones to leave off for GPU workers.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge.pool import Worker
from warpgym.env.judge.sandbox import defaults
from warpgym.tasks import get_task

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
    everything_off = {layer: False for layer in LAYERS}
    configs: dict[str, dict | bool] = {"all": dict.fromkeys(LAYERS, True), "none": everything_off}
    for layer in LAYERS:
        configs[layer] = {**everything_off, layer: True}
    results = {}

    def run(name: str, cfg: dict | bool) -> dict:
        results[name] = r = attempt(cfg)
        r["config"] = cfg
        print(f"{name:24s} correct={r['correct']!s:5s} {r.get('seconds', '-')}s "
              f"not_applied={sorted(r.get('not_applied') or {})} {r.get('error') or ''}", flush=True)
        return r

    for name, cfg in configs.items():
        run(name, cfg)
    passing = [layer for layer in LAYERS if results[layer]["correct"]]
    if passing and not results["all"]["correct"]:
        # The layers that pass alone, together; if that fails, each of them left out in turn.
        together = {**everything_off, **dict.fromkeys(passing, True)}
        if not run("together:" + "+".join(passing), together)["correct"] and len(passing) > 1:
            for layer in passing:
                run(f"together-without:{layer}", {**together, layer: False})
    print("defaults:", json.dumps(defaults("cuda", "run")))
    out = Path(os.environ.get("OUT", ".")) / "sandbox_probe.json"
    out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
