"""Evaluation speed and timing fidelity on a GPU (issues 2 and 10). Run on the H200:

    python3 scripts/gpu_bench.py --out $OUT/bench.json

Reports, for a fixed mix (the five core references and two plausible wrong candidates each):
evaluations per minute; median and p90 seconds per evaluation with a warm worker and with a
cold one; the share of time spent timing the candidate; the harness's own overhead; the
spread (max/min) of five repeated timings of the same kernel; and, for the matmul reference
at a bench shape, the harness's median against Nsight Compute's gpu__time_duration.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kernelgym.env import EvalOptions, Evaluator  # noqa: E402
from kernelgym.tasks import get_task  # noqa: E402

CORE = ["math/add", "normalization/softmax", "normalization/layer-norm", "matmul/matmul", "fusion/attention"]


def mix() -> list[tuple[str, str, str]]:
    from test_env_core import WRONG  # the plausible wrong candidates of the core tests

    items = []
    for task_id in CORE:
        source = get_task(task_id).solution_source()
        items.append((task_id, "reference", source))
        for label, old, new in WRONG[task_id]:
            items.append((task_id, label, source.replace(old, new, 1)))
    return items


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def run_mix(evaluator: Evaluator, items, options: EvalOptions) -> list[dict]:
    rows = []
    for task_id, label, source in items:
        started = time.perf_counter()
        result = evaluator.evaluate(get_task(task_id), source, options)
        rows.append({"task": task_id, "candidate": label, "correct": result.correct,
                     "seconds": time.perf_counter() - started, "stages": result.seconds,
                     "speedup": result.speedup})
        print(f"  {task_id:26s} {label[:34]:34s} correct={result.correct!s:5s} {rows[-1]['seconds']:.2f}s "
              f"{ {k: round(v, 2) for k, v in result.seconds.items()} }", flush=True)
    return rows


def ncu_matmul(case: dict) -> float | None:
    """Nsight Compute's gpu__time_duration for the matmul reference at one bench shape, in ms."""
    script = textwrap.dedent(f"""
        import importlib.util, torch
        from kernelgym.tasks import get_task, Sampler
        task = get_task("matmul/matmul")
        spec = importlib.util.spec_from_file_location("ref", task.solution_path)
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        inputs = task.make_inputs({case!r}, Sampler(0, "normal", "cuda"))
        for _ in range(3):
            mod.matmul(**inputs)
        torch.cuda.synchronize()
    """)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    cmd = ["ncu", "--clock-control", "none", "--kernel-name", "regex:^matmul_kernel$", "--launch-skip", "2",
           "--launch-count", "1", "--metrics", "gpu__time_duration.sum", "--csv", sys.executable, f.name]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    match = re.findall(r'"gpu__time_duration.sum","([a-z]+)","([\d.,]+)"', proc.stdout)
    if not match:
        print("ncu output:", proc.stdout[-2000:], proc.stderr[-2000:])
        return None
    unit, value = match[-1]
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}[unit]
    return float(value.replace(",", "")) * scale


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    options = EvalOptions(device="cuda", shape_sets=("dev",), reps=args.reps, warmup=5)
    items = mix()
    report: dict = {"device": None, "mix": len(items)}

    # Cold: a fresh evaluator (new worker processes) for each of three evaluations.
    cold = []
    for task_id, _, source in items[:3]:
        with Evaluator("cuda") as evaluator:
            started = time.perf_counter()
            evaluator.evaluate(get_task(task_id), source, options)
            cold.append(time.perf_counter() - started)
        print(f"cold evaluation of {task_id}: {cold[-1]:.2f} s", flush=True)

    with Evaluator("cuda") as evaluator:
        report["device"] = evaluator.evaluate(get_task("math/add"), get_task("math/add").solution_source(),
                                              EvalOptions(device="cuda", timing=False)).device
        first = run_mix(evaluator, items, options)   # baselines measured here, then cached
        started = time.perf_counter()
        warm = run_mix(evaluator, items, options)    # the steady state of a long experiment
        wall = time.perf_counter() - started
        spread_task = get_task("matmul/matmul")
        medians = []
        for _ in range(5):
            r = evaluator.evaluate(spread_task, spread_task.solution_source(), options)
            medians.append(r.timing[0].median_ms)

    seconds = [r["seconds"] for r in warm]
    timing = [r["stages"].get("timing_candidate", 0.0) for r in warm]
    compile_s = [r["stages"].get("compile", 0.0) for r in warm]
    overhead = [s - t - c for s, t, c in zip(seconds, timing, compile_s, strict=True)]
    report.update({
        "evaluations_per_minute_warm": 60 * len(warm) / wall,
        "first_pass_seconds_total": sum(r["seconds"] for r in first),
        "warm_median_s": statistics.median(seconds), "warm_p90_s": p90(seconds),
        "cold_median_s": statistics.median(cold), "cold_p90_s": p90(cold),
        "timing_share": sum(timing) / sum(seconds),
        "overhead_median_s": statistics.median(overhead),
        "spread_medians_ms": medians, "spread_max_over_min": max(medians) / min(medians),
        "rows": warm,
    })
    case = get_task("matmul/matmul").cases("bench")[0]
    ncu_ms = ncu_matmul(case)
    report["ncu_matmul_ms"] = ncu_ms
    report["harness_matmul_ms"] = statistics.median(medians)
    if ncu_ms:
        report["harness_vs_ncu"] = report["harness_matmul_ms"] / ncu_ms
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    for key, value in report.items():
        if key != "rows":
            print(f"{key}: {value}")
    print("\nper evaluation (warm):")
    for r in warm:
        print(f"  {r['task']:26s} {r['candidate'][:34]:34s} correct={r['correct']!s:5s} {r['seconds']:.2f}s")


if __name__ == "__main__":
    main()
