"""warpgym and KernelBench side by side, on the same GPU, the same candidates, one run.

KernelBench is brought in for this measurement only, never committed: copy its ``src`` folder
into ``.kb/`` (ignored by git) and carry it to the GPU machine:

    git -C <KernelBench checkout> archive HEAD src | tar -x -C .kb
    python3 scripts/kernelbench_compare.py --kb .kb/src --out $OUT/kb.json

Each candidate (the core tasks' references and plausible wrong candidates: the mix of
``warpgym bench``) is translated to KernelBench's format (a reference ``Model`` and a
``ModelNew`` calling the candidate's entrypoint) at the task's first bench shape, and evaluated
the way a KernelBench user gets a speedup: ``eval_kernel_against_ref`` (5 correctness trials,
100 timed trials) plus the reference timed eager and under torch.compile
(``measure_ref_program_time``). warpgym evaluates the same candidates with its defaults (dev
correctness, bench timing, baselines eager, torch.compile and vendor). Reported for both:
evaluations per minute, and the spread (max/min) of five repeated timings of the matmul reference.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import types
from pathlib import Path

import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.experiments.bench.eval_throughput import mix, p90
from warpgym.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]

MODEL_TEMPLATE = '''
import torch
import torch.nn as nn
from warpgym.tasks import get_task, Sampler

TASK = get_task({task_id!r})
CASE = {case!r}


class Model(nn.Module):
    def forward(self, *args):
        return TASK.reference(*args)


def get_inputs():
    inputs = TASK.make_inputs(CASE, Sampler(0, "normal", "cpu"))
    return list(inputs.values())


def get_init_inputs():
    return []
'''

MODEL_NEW_TEMPLATE = '''
{candidate}

import torch.nn as _nn


class ModelNew(_nn.Module):
    def forward(self, *args):
        return {entrypoint}(*args)
'''


def stub_missing_modules() -> None:
    """KernelBench's package imports LLM clients (and requests, tqdm) at import; they are not needed to
    evaluate."""
    for name in ("litellm", "dotenv", "openai", "datasets", "modal", "pydra", "requests", "tqdm"):
        try:
            __import__(name)
        except ImportError:
            module = types.ModuleType(name)
            module.load_dotenv = lambda *a, **k: None
            module.completion = lambda *a, **k: None
            module.OpenAI = type("OpenAI", (), {})
            module.tqdm = lambda iterable=None, *a, **k: iterable
            sys.modules[name] = module


def precision_of(case: dict) -> torch.dtype:
    return getattr(torch, case.get("dtype", "float32"))


def kernelbench_eval(kb_eval, kb_timing, task_id: str, source: str, case: dict) -> dict:
    task = get_task(task_id)
    ref_src = MODEL_TEMPLATE.format(task_id=task_id, case=case)
    new_src = MODEL_NEW_TEMPLATE.format(candidate=source, entrypoint=task.entrypoint)
    precision = precision_of(case)
    started = time.perf_counter()
    result = kb_eval.eval_kernel_against_ref(ref_src, new_src, num_correct_trials=5, num_perf_trials=100,
                                             measure_performance=True, backend="triton", precision=precision,
                                             device=torch.device("cuda:0"))
    baselines = {}
    for compiled in (False, True):
        stats = kb_timing.measure_ref_program_time("Model", ref_src, num_trials=100,
                                                   use_torch_compile=compiled, device=torch.device("cuda:0"),
                                                   precision=precision)
        baselines["torch.compile" if compiled else "eager"] = stats.get("mean")
    seconds = time.perf_counter() - started
    return {"task": task_id, "seconds": seconds, "compiled": getattr(result, "compiled", None),
            "correct": getattr(result, "correctness", None), "runtime_ms": getattr(result, "runtime", None),
            "baselines_ms": baselines}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", default=str(ROOT / ".kb" / "src"), help="KernelBench's src folder")
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "kb.json"))
    parser.add_argument("--tasks", default=None, help="comma-separated task ids to keep from the mix")
    parser.add_argument("--warm-cache", action="store_true",
                        help="let warpgym reuse baselines cached on disk by earlier runs (default: a "
                             "fresh cache: warpgym pays for its baselines once, as on a new machine)")
    args = parser.parse_args()
    if not args.warm_cache:
        import tempfile

        os.environ["WARPGYM_CACHE_DIR"] = tempfile.mkdtemp(prefix="warpgym-cache-")
    stub_missing_modules()
    sys.path.insert(0, args.kb)
    from kernelbench import eval as kb_eval
    from kernelbench import timing as kb_timing

    keep = args.tasks.split(",") if args.tasks else None
    items = [(t, label, src, get_task(t).cases("bench")[0]) for t, label, src in mix(keep)]
    report: dict = {"candidates": len(items)}

    # warpgym: a warm evaluator (its workers start once, as in a long experiment).
    options = EvalOptions(device="cuda", shape_sets=("dev",), reps=100, warmup=5)
    with Evaluator("cuda") as evaluator:
        started = time.perf_counter()
        kg_rows = []
        for task_id, label, source, _ in items:
            t0 = time.perf_counter()
            r = evaluator.evaluate(get_task(task_id), source, options)
            kg_rows.append({"task": task_id, "candidate": label, "correct": r.correct,
                            "seconds": time.perf_counter() - t0})
            print("warpgym:", kg_rows[-1], flush=True)
        kg_wall = time.perf_counter() - started
        # The same candidates again: baselines cached, as for every candidate after the first of a task
        # in an experiment (KernelBench measures its baselines anew for each evaluation).
        started = time.perf_counter()
        kg_warm = []
        for task_id, _, source, _ in items:
            t0 = time.perf_counter()
            evaluator.evaluate(get_task(task_id), source, options)
            kg_warm.append(time.perf_counter() - t0)
        kg_warm_wall = time.perf_counter() - started
        print(f"warpgym, second pass (baselines cached): {kg_warm}", flush=True)
        mm = get_task("matmul/matmul")
        kg_medians = []
        for _ in range(5):
            timed = evaluator.evaluate(mm, mm.solution_source(), options)
            if not timed.timing:  # reported, and the comparison goes on without this figure
                print("warpgym: the matmul reference was not timed:", timed.feedback, flush=True)
                continue
            kg_medians.append(timed.timing[0].median_ms)

    # KernelBench: its own harness, in this process, as its scripts run it.
    started = time.perf_counter()
    kb_rows = []
    for task_id, label, source, case in items:
        try:
            row = kernelbench_eval(kb_eval, kb_timing, task_id, source, case)
        except Exception as exc:  # noqa: BLE001 - a harness failure is a result to report
            row = {"task": task_id, "error": f"{type(exc).__name__}: {exc}"[:300], "seconds": None}
        row["candidate"] = label
        kb_rows.append(row)
        print("kernelbench:", row, flush=True)
    kb_wall = time.perf_counter() - started
    mm_src = get_task("matmul/matmul").solution_source()
    mm_case = get_task("matmul/matmul").cases("bench")[0]
    kb_runtimes = []
    mm_ref = MODEL_TEMPLATE.format(task_id="matmul/matmul", case=mm_case)
    mm_new = MODEL_NEW_TEMPLATE.format(candidate=mm_src, entrypoint="matmul")
    for _ in range(5):
        try:
            r = kb_eval.eval_kernel_against_ref(mm_ref, mm_new,
                                                num_correct_trials=1, num_perf_trials=100,
                                                measure_performance=True,
                                                backend="triton", precision=precision_of(mm_case),
                                                device=torch.device("cuda:0"))
        except Exception as exc:  # noqa: BLE001 - reported; the rest of the comparison stands
            print(f"kernelbench: the matmul spread run failed: {type(exc).__name__}: {exc}"[:500], flush=True)
            continue
        print("kernelbench: matmul runtime (ms):", r.runtime, flush=True)
        kb_runtimes.append(r.runtime)

    kb_seconds = [r["seconds"] for r in kb_rows if r.get("seconds")]
    report["warpgym"] = {"evaluations_per_minute": 60 * len(items) / kg_wall,
                           "median_s": statistics.median(r["seconds"] for r in kg_rows),
                           "p90_s": p90([r["seconds"] for r in kg_rows]),
                           "evaluations_per_minute_second_pass": 60 * len(items) / kg_warm_wall,
                           "second_pass_median_s": statistics.median(kg_warm),
                           "spread_ms": kg_medians,
                           "spread_max_over_min": max(kg_medians) / min(kg_medians) if kg_medians else None,
                           "rows": kg_rows}
    report["kernelbench"] = {"evaluations_per_minute": 60 * len(items) / kb_wall,
                             "median_s": statistics.median(kb_seconds) if kb_seconds else None,
                             "p90_s": p90(kb_seconds) if kb_seconds else None,
                             "spread_ms": kb_runtimes,
                             "spread_max_over_min": max(kb_runtimes) / min(kb_runtimes)
                             if kb_runtimes and min(kb_runtimes) > 0 else None, "rows": kb_rows}
    report["throughput_ratio"] = report["warpgym"]["evaluations_per_minute"] / \
        report["kernelbench"]["evaluations_per_minute"]
    report["throughput_ratio_second_pass"] = report["warpgym"]["evaluations_per_minute_second_pass"] / \
        report["kernelbench"]["evaluations_per_minute"]
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    for name in ("warpgym", "kernelbench"):
        r = report[name]
        print(f"{name}: {r['evaluations_per_minute']:.1f} evaluations/min, median {r['median_s']} s, "
              f"p90 {r['p90_s']} s, spread {r['spread_max_over_min']}")
    print(f"throughput ratio warpgym/kernelbench: {report['throughput_ratio']:.2f} (first pass, fresh "
          f"cache), {report['throughput_ratio_second_pass']:.2f} (second pass, baselines cached)")


if __name__ == "__main__":
    main()
