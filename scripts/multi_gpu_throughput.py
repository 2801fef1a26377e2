"""Evaluations per minute with 1, 2, ..., N GPUs. Run on a machine with several GPUs:

    python3 scripts/multi_gpu_throughput.py --out $OUT/multi_gpu.json

The candidates are ``warpgym bench``'s mix (the five core references and two plausible wrong
candidates each), repeated ``--rounds`` times. For each GPU count g, the local executor
(experiments/executors.py, what ``run.executor = "local"`` uses) holds ``--workers-per-gpu``
evaluators on each of cuda:0 .. cuda:g-1, each pinned to its GPU, and spreads the candidates over
them from one queue. Every evaluator first judges the mix once, untimed (worker processes warm,
baselines measured and cached), so the figures are a long experiment's steady state. The verdicts
must not depend on g; the medians of the references' timings show whether evaluations on other
GPUs (or, with several workers per GPU, on the same one) disturb timing.

Ray is not used here: its wheel is larger than what can be carried to the GPU machine, so the
measurement uses the local executor. Each Ray actor runs that same evaluator on its own GPU, so
the per-GPU figures carry over; the Ray executor itself is tested on the CPU
(tests/experiments/test_executors.py).

``--cpu N`` measures 1 .. N evaluators on the CPU instead (Triton's interpreter, nothing timed):
a check of the script on a machine without a GPU, not a GPU figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from warpgym.env import EvalOptions, Evaluator
from warpgym.experiments.bench.eval_throughput import mix
from warpgym.experiments.executors import LocalExecutor, current_gpu
from warpgym.tasks import get_task


class Lent:
    """A warm evaluator lent to one measurement: the executor's ``close`` leaves it running."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def evaluate(self, task: Any, source: str, options: EvalOptions) -> Any:
        return self.evaluator.evaluate(task, source, options)

    def close(self) -> None:
        pass


def warm_up(
    evaluators: list[tuple[str, Evaluator]], items: list[tuple[str, str, str]], options: EvalOptions
) -> float:
    """Every evaluator judges the mix once, all at the same time; returns the seconds it took."""

    def one(device: str, evaluator: Evaluator) -> None:
        with current_gpu(device):
            for task_id, _, source in items:
                evaluator.evaluate(get_task(task_id), source, options)

    started = time.perf_counter()
    threads = [threading.Thread(target=one, args=pair) for pair in evaluators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def measure(
    devices: list[str],
    warm: dict[str, list[Evaluator]],
    items: list[tuple[str, str, str]],
    options: EvalOptions,
    rounds: int,
) -> dict[str, Any]:
    """Evaluate ``items`` x ``rounds`` over the warm evaluators of ``devices``; evaluations per minute."""
    stock = {d: list(evs) for d, evs in warm.items()}
    executor = LocalExecutor(devices, factory=lambda d: Lent(stock[d].pop()))
    work = [item for _ in range(rounds) for item in items]
    started = time.perf_counter()
    futures = [(item, executor.submit(item[0], item[2], options)) for item in work]
    verdicts: dict[str, bool] = {}
    seconds: list[float] = []
    timings: dict[str, list[float]] = {}
    for (task_id, label, _), future in futures:
        result = future.result()
        verdicts[f"{task_id} [{label}]"] = bool(result.correct)
        seconds.append(result.seconds.get("total", 0.0))
        if label == "reference" and result.timing:
            timings.setdefault(task_id, []).append(result.timing[0].median_ms)
    wall = time.perf_counter() - started
    executor.close()
    return {
        "devices": devices,
        "evaluators": len(devices),
        "evaluations": len(work),
        "wall_s": round(wall, 2),
        "per_minute": round(len(work) / wall * 60, 1),
        "median_eval_s": round(statistics.median(seconds), 3),
        "verdicts": verdicts,
        "reference_median_ms": {t: round(statistics.median(v), 4) for t, v in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=os.path.join(os.environ.get("OUT", "."), "multi_gpu_throughput.json")
    )
    parser.add_argument("--gpus", type=int, help="the most GPUs to use (default: every visible one)")
    parser.add_argument("--counts", help="GPU counts to measure, e.g. 1,2,4,8 (default: 1 .. --gpus)")
    parser.add_argument(
        "--workers-per-gpu", type=int, default=1, help="evaluators per GPU (run.workers_per_gpu)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="times the mix is evaluated per GPU count")
    parser.add_argument("--reps", type=int, default=30, help="timed calls per bench shape")
    parser.add_argument("--tasks", help="comma-separated task ids to keep from the mix (default: all five)")
    parser.add_argument(
        "--cpu", type=int, metavar="N", help="measure 1 .. N CPU evaluators instead (a dry run)"
    )
    args = parser.parse_args()

    import torch

    items = mix()
    if args.tasks:
        items = [i for i in items if i[0] in set(args.tasks.split(","))]
    if args.cpu:
        most, per_device, unit = args.cpu, 1, "CPU evaluators"
        names = [f"cpu#{i}" for i in range(most)]  # labels: each is one Evaluator("cpu")
        options = EvalOptions(device="cpu", shape_sets=("dev",), timing=False)
        device_name = "cpu (Triton interpreter)"
    else:
        visible = torch.cuda.device_count()
        if not visible:
            sys.exit("no CUDA GPU is visible; use --cpu N for a dry run on the CPU")
        most, per_device, unit = min(args.gpus or visible, visible), args.workers_per_gpu, "GPUs"
        names = [f"cuda:{i}" for i in range(most)]
        visible_env = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible_env and visible_env.replace(" ", "") != ",".join(str(i) for i in range(visible)):
            print(
                f"warning: CUDA_VISIBLE_DEVICES={visible_env}: the evaluators' worker processes are pinned "
                "by index (env/judge/pool.py), which is right only when it lists 0, 1, ... in order",
                file=sys.stderr,
            )
        options = EvalOptions(device="cuda", shape_sets=("dev",), reps=args.reps, warmup=5)
        device_name = torch.cuda.get_device_name(0)
    counts = [int(c) for c in args.counts.split(",")] if args.counts else list(range(1, most + 1))
    if any(c < 1 or c > most for c in counts):
        sys.exit(f"--counts must lie in 1 .. {most}")

    print(
        f"{device_name}: {len(items)} candidates x {args.rounds} rounds; {unit} {counts}; "
        f"{per_device} evaluator(s) each",
        file=sys.stderr,
        flush=True,
    )
    warm = {name: [Evaluator("cpu" if args.cpu else name) for _ in range(per_device)] for name in names}
    results = []
    try:
        warm_s = warm_up([(name, ev) for name, evs in warm.items() for ev in evs], items, options)
        print(f"warm-up (every evaluator judged the mix once): {warm_s:.1f} s", file=sys.stderr, flush=True)
        for count in counts:
            devices = [d for _ in range(per_device) for d in names[:count]]
            row = {"count": count, **measure(devices, warm, items, options, args.rounds)}
            results.append(row)
            print(
                f"{count} {unit}: {row['per_minute']} evaluations/min ({row['evaluations']} in "
                f"{row['wall_s']} s)",
                file=sys.stderr,
                flush=True,
            )
    finally:
        for evs in warm.values():
            for ev in evs:
                ev.close()

    per_unit = results[0]["per_minute"] / counts[0]
    consistent = all(r["verdicts"] == results[0]["verdicts"] for r in results)
    report = {
        "device": device_name,
        "kind": "cpu" if args.cpu else "cuda",
        "evaluators_per_device": per_device,
        "candidates": len(items),
        "rounds": args.rounds,
        "warm_up_s": round(warm_s, 1),
        "verdicts_consistent": consistent,
        "results": results,
        "command": " ".join(sys.argv),
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
    }
    label = "CPUs" if args.cpu else "GPUs"
    print(f"\n{label:>5} {'evaluators':>10} {'evaluations':>11} {'wall s':>8} {'eval/min':>9} {'x one':>6}")
    for r in results:
        print(
            f"{r['count']:>5} {r['evaluators']:>10} {r['evaluations']:>11} {r['wall_s']:>8} "
            f"{r['per_minute']:>9} {r['per_minute'] / per_unit:>6.2f}"
        )
    if not args.cpu:
        print("reference timings, median ms at each count (other GPUs busy must not change them):")
        for task_id in results[0]["reference_median_ms"]:
            print(f"  {task_id}: " + ", ".join(str(r["reference_median_ms"].get(task_id)) for r in results))
    print(f"verdicts identical at every count: {consistent}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
