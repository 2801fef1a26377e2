"""Run every `ptx` reference through the evaluator on a GPU and print PTXBench's three answers.

    python scripts/gpu_ptx_check.py [--tasks ptx/gemm-bf16 ...] [--reps N] [--memcheck] [--no-profile]
                                    [--no-extra | --extra-only]

For each task, and each of its extra reference solutions (the hand-written CUDA ones) unless
--no-extra: correct (dev + heldout shapes), arch-verified (required features present in the SASS
AND executed, by Nsight Compute's counts), the executed count of each feature family, and the share
of the task's flops its tensor-core instructions did (and of other arithmetic, and the bytes of ordinary
loads), and the bench shape's time, TFLOP/s and speedup over the vendor library (cuBLAS / cuDNN through
PyTorch) with its paired-timing interval.
Writes ``ptx_check.json`` (every EvalResult) under $OUT when that is set, else under the cwd.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

FAMILIES_SHOWN = ("wgmma", "tma", "mbarrier", "tcgen05", "stmatrix", "setmaxnreg")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="*", default=None, help="task ids (default: suite ptx)")
    parser.add_argument("--target", default="sm_90a")
    parser.add_argument("--shape-sets", nargs="*", default=["dev", "heldout"])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=None,
                        help="at most this many timed calls of each side (reps // 5 rounds, at least 6); "
                             "default: the paired timing's own stop rule, up to 60 rounds")
    parser.add_argument("--memcheck", action="store_true", help="compute-sanitizer memcheck before timing")
    parser.add_argument("--no-profile", action="store_true", help="skip Nsight Compute executed counts")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--no-extra", action="store_true", help="the tasks' default references only")
    parser.add_argument("--extra-only", action="store_true", help="the tasks' extra references only")
    args = parser.parse_args()

    import torch
    from warpgym.env import EvalOptions, Evaluator
    from warpgym.tasks import all_tasks, get_task

    if not torch.cuda.is_available():
        print("no CUDA GPU here: this script checks the ptx references on a GPU", file=sys.stderr)
        return 2
    tasks = [get_task(t) for t in args.tasks] if args.tasks else all_tasks(suite="ptx")
    out_dir = Path(os.environ.get("OUT") or ".")
    out_path = out_dir / "ptx_check.json"
    header = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "target": args.target,
    }
    print(json.dumps(header), flush=True)
    options = EvalOptions(
        target=args.target,
        device="cuda",
        shape_sets=tuple(args.shape_sets),
        timing=not args.no_timing,
        warmup=args.warmup,
        reps=args.reps,
        profile=not args.no_profile,
        memcheck=args.memcheck,
    )
    records = []
    with Evaluator("cuda") as evaluator:
        work = [(t, extra) for t in tasks for extra in (None, *(() if args.no_extra else t.extra_solutions))
                if extra is not None or not args.extra_only]
        for task, extra in work:
            label = task.id if extra is None else f"{task.id} ({extra})"
            started = time.perf_counter()
            try:
                result = evaluator.evaluate(task, task.solution_candidate(extra), options)
            except Exception as exc:  # noqa: BLE001 - one task's failure must not hide the others
                print(f"{label}: evaluator raised {type(exc).__name__}: {exc}", flush=True)
                records.append({"task": label, "error": f"{type(exc).__name__}: {exc}"})
                continue
            row = _row(task, result, time.perf_counter() - started, label)
            records.append({"summary": row, "result": result.to_dict()})
            print(json.dumps(row), flush=True)
            if not result.correct or not result.arch_verified:
                print(result.feedback[:3000], flush=True)
            out_path.write_text(json.dumps({"header": header, "records": records}, indent=1, default=str))
    _table([r["summary"] for r in records if "summary" in r])
    print(f"wrote {out_path}")
    return (
        0
        if all(r.get("summary", {}).get("correct") and r["summary"].get("arch_verified") for r in records)
        else 1
    )


def _row(task, result, seconds: float, label: str) -> dict:
    timing = (result.timing or [None])[0]
    vendor_ms = timing.baselines_ms.get("vendor") if timing else None
    executed = {f: result.instructions.get(f, {}).get("executed") for f in FAMILIES_SHOWN}
    return {
        "task": label,
        "stage": result.stage,
        "correct": result.correct,
        "arch_verified": result.arch_verified,
        "timed_tensor_cores": result.timed_tensor_cores,
        "missing": result.missing_features,
        "executed": executed,
        "sass": {f: result.instructions.get(f, {}).get("sass") for f in FAMILIES_SHOWN},
        "work": _work(result.executed_work),
        "checks": sum(1 for c in result.cases if c.passed),
        "failed": sum(1 for c in result.cases if c.passed is False),
        "ms": timing.median_ms if timing else None,
        "tflops": timing.tflops if timing else None,
        "vendor": task.vendor_name,
        "vendor_ms": vendor_ms,
        "vendor_tflops": task.flops(timing.case) / (vendor_ms * 1e9) if timing and vendor_ms else None,
        "ratio": vendor_ms / timing.median_ms if timing and vendor_ms else None,
        "speedup": [(result.speedup or {}).get("vendor"), (result.speedup_low or {}).get("vendor"),
                    (result.speedup_high or {}).get("vendor")],
        "registers": {k.name: k.registers for k in result.kernels},
        "skipped": result.skipped_checks,
        "suspicious": result.suspicious,
        "seconds": round(seconds, 1),
        "phase_seconds": {k: round(v, 1) for k, v in result.seconds.items()},
    }


def _work(work: dict | None) -> dict | None:
    """The profiled call's work as shares of the task's: tensor-core flops per family, other arithmetic,
    every other instruction per flop, ordinary global-load bytes (judge/work.py)."""
    if not work or not work.get("task_flops"):
        return None
    flops, nbytes = work["task_flops"], work["task_bytes"] or 1
    return {"tensor": {f: round(v / flops, 4) for f, v in work["tensor_flops"].items() if v},
            "other": round(work["other_flops"] / flops, 4),
            "instructions": round(work.get("other_instructions", 0.0) / flops, 4),
            "loads": round(work["load_bytes"] / nbytes, 4)}


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _table(rows: list[dict]) -> None:
    print()
    print(
        f"{'task':55} {'correct':7} {'arch':5} {'wgmma exec':>11} {'tma exec':>9} {'mbar exec':>10} "
        f"{'tcgen05':>8} {'ms':>8} {'TFLOP/s':>8} {'vendor':>8} {'speedup [low, high]':>20}"
    )
    for r in rows:
        e = r["executed"]
        print(
            f"{r['task']:55} {str(r['correct']):7} {str(r['arch_verified']):5} {_fmt(e['wgmma'], 'd'):>11} "
            f"{_fmt(e['tma'], 'd'):>9} {_fmt(e['mbarrier'], 'd'):>10} {_fmt(e['tcgen05'], 'd'):>8} "
            f"{_fmt(r['ms'], '.3f'):>8} {_fmt(r['tflops'], '.1f'):>8} {_fmt(r['vendor_tflops'], '.1f'):>8} "
            f"{_speedup(r['speedup']):>20}"
        )


def _speedup(interval: list) -> str:
    median, low, high = interval
    return "-" if median is None else f"{median:.3f} [{_fmt(low, '.3f')}, {_fmt(high, '.3f')}]"


if __name__ == "__main__":
    sys.exit(main())
