"""Does a speedup repeat? The same candidates evaluated in separate processes (GPU only).

Each of ``--processes`` fresh Python processes builds one evaluator and evaluates the reference
solutions of the pairs below with the default options (paired timing, bench shapes) but for the paired
timing's settling rounds (``--settling-rounds``); the parent collects, for every pair and bench case, the
speedup each process reported, its interval, what ended the rounds and the seconds spent timing. Printed
per pair: the speedups, max/min, whether every interval covers every other process's point estimate, and
the timing seconds. The output JSON records the settling rounds asked for (``settling_rounds``) and, per
case, how many ran.

    CUDA_VISIBLE_DEVICES=0 python3 scripts/paired_repeat.py --out $OUT/paired_repeat.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from warpgym.env.judge.options import PairedTiming

PAIRS = (("matmul/matmul", "vendor"), ("normalization/softmax", "eager"), ("math/add", "eager"),
         ("ptx/attention-fwd", "vendor"))
if "--pairs" in sys.argv:  # e.g. --pairs math/add=eager,normalization/softmax=eager
    PAIRS = tuple(tuple(p.split("=")) for p in sys.argv[sys.argv.index("--pairs") + 1].split(","))

CHILD = r"""
import json, sys, time
import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge.baselines import callables
from warpgym.env.judge.options import PairedTiming
from warpgym.tasks import Sampler, get_task


def baseline_kernels(task, name, case):
    # the kernels one call of the baseline ran in this process (does a library choose per process?)
    try:
        fn = callables(task, case)[name]
        inputs = task.make_inputs(case, Sampler(0, task.distributions[0], "cuda"))
        fn(**inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn(**inputs)
            torch.cuda.synchronize()
        return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    except Exception as exc:
        return [f"not traced: {type(exc).__name__}: {exc}"[:200]]


pairs, settling_rounds = json.loads(sys.argv[1]), int(sys.argv[2])
out = []
with Evaluator("cuda") as evaluator:
    for task_id, baseline in pairs:
        task = get_task(task_id)
        started = time.perf_counter()
        paired = PairedTiming(settling_rounds=settling_rounds)
        options = EvalOptions(device="cuda", profile=False, paired=paired)
        result = evaluator.evaluate(task, task.solution_candidate(), options)
        cases = []
        for t in result.timing or []:
            r = t.ratios.get(baseline)
            cases.append({"case": t.case, "median_ms": t.median_ms,
                          "baseline_ms": t.baselines_ms.get(baseline), "rounds": t.rounds,
                          "block_calls": t.block_calls, "ended_by": t.ended_by,
                          "settling_rounds": t.settling_rounds,
                          "baseline_kernels": baseline_kernels(task, baseline, t.case),
                          "ratio": None if r is None else {"median": r.median, "low": r.low, "high": r.high}})
        detail = [dict(vars(t), machine=str(t.machine)) for t in result.timing or []]
        out.append({"task": task_id, "baseline": baseline, "correct": result.correct,
                    "suspicious": result.suspicious, "timing_detail": detail,
                    "seconds": time.perf_counter() - started, "stage_seconds": result.seconds,
                    "speedup": (result.speedup or {}).get(baseline), "cases": cases,
                    "feedback": result.feedback[-600:] if not result.correct else ""})
print("RESULT " + json.dumps(out, default=str))
"""


def _summary(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    for i, (task_id, baseline) in enumerate(PAIRS):
        per = [run[i] for run in runs if len(run) > i]
        n_cases = max((len(p["cases"]) for p in per), default=0)
        for c in range(n_cases):
            ratios = [p["cases"][c]["ratio"] for p in per if len(p["cases"]) > c and p["cases"][c]["ratio"]]
            medians = [r["median"] for r in ratios]
            covers = all(r["low"] <= m <= r["high"] for r in ratios for m in medians)
            rows.append({
                "task": task_id, "baseline": baseline, "case": per[0]["cases"][c]["case"],
                "speedups": medians, "max_over_min": max(medians) / min(medians) if medians else None,
                "every_interval_covers_the_others": covers,
                "candidate_ms": [p["cases"][c]["median_ms"] for p in per if len(p["cases"]) > c],
                "baseline_ms": [p["cases"][c].get("baseline_ms") for p in per if len(p["cases"]) > c],
                "baseline_kernels": sorted({" + ".join(p["cases"][c].get("baseline_kernels") or [])
                                            for p in per if len(p["cases"]) > c}),
                "ended_by": [p["cases"][c]["ended_by"] for p in per if len(p["cases"]) > c],
                "timing_seconds": [p["stage_seconds"].get("timing") for p in per],
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="paired_repeat.json")
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300, help="seconds for all processes together")
    parser.add_argument("--parallel", type=int, default=1,
                        help="processes at once (timing still holds the GPU alone: common/timing.gpu_lock)")
    parser.add_argument("--pairs", help="task=baseline,... (default: the four above)")
    parser.add_argument("--settling-rounds", type=int, default=PairedTiming().settling_rounds,
                        help="rounds timed and thrown away before the counted ones "
                             "(PairedTiming.settling_rounds)")
    args = parser.parse_args()
    try:  # refused once here rather than in every child
        PairedTiming(settling_rounds=args.settling_rounds)
    except ValueError as exc:
        parser.error(str(exc))
    runs, errors = [], []
    started = time.perf_counter()
    pending = list(range(args.processes))
    while pending:  # --parallel processes at once: they compile side by side, their timing waits for the GPU
        batch, pending = pending[:args.parallel], pending[args.parallel:]
        child = [sys.executable, "-c", CHILD, json.dumps(PAIRS), str(args.settling_rounds)]
        procs = {i: subprocess.Popen(child, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in batch}
        for i, proc in procs.items():
            try:
                left = args.timeout - (time.perf_counter() - started)
                stdout, stderr = proc.communicate(timeout=max(1.0, left))
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            line = next((x for x in stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                errors.append({"process": i, "rc": proc.returncode, "stderr": stderr[-2000:]})
                continue
            runs.append(json.loads(line[len("RESULT "):]))
            print(f"process {i}: " + ", ".join(f"{r['task']} {r['speedup']}" for r in runs[-1]), flush=True)
            Path(args.out).write_text(json.dumps({"settling_rounds": args.settling_rounds, "runs": runs,
                                                  "errors": errors}, indent=1, default=str))
    summary = _summary(runs)
    for row in summary:
        spread = row["max_over_min"] and round(row["max_over_min"], 4)
        print(f"{row['task']} {row['case']}: {[round(s, 3) for s in row['speedups']]} max/min {spread} "
              f"covers {row['every_interval_covers_the_others']} ended {row['ended_by']}\n"
              f"  candidate ms {[round(x, 4) for x in row['candidate_ms']]}\n"
              f"  {row['baseline']} ms {[x and round(x, 4) for x in row['baseline_ms']]}\n"
              f"  {row['baseline']} kernels (each distinct set): {row['baseline_kernels']}")
    Path(args.out).write_text(json.dumps({"settling_rounds": args.settling_rounds, "runs": runs,
                                          "summary": summary, "errors": errors,
                                          "seconds": time.perf_counter() - started}, indent=1, default=str))


if __name__ == "__main__":
    main()
