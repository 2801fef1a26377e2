"""``kernelgym suite check``: every reference solution through the environment, as a table.

Fails (exit 1) if any reference fails: a suite whose references do not pass cannot judge
anyone else's kernels.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from kernelgym.tasks import all_tasks

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("suite", help="check the suites' reference solutions")
    ssub = parser.add_subparsers(dest="suite_command", metavar="ACTION", required=True)
    check = ssub.add_parser("check", help="run every reference solution through the environment")
    check.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    check.add_argument("--suite", default=None, help="triton or ptx (default: both)")
    check.add_argument("--category", default=None)
    check.add_argument("--task", action="append", default=[], help="only these task ids (repeatable)")
    check.add_argument("--shapes", default=None,
                       help="shape sets to check (default: dev,heldout on a CPU; dev,heldout,bench on a GPU)")
    check.add_argument("--target", default="sm_90a", choices=["sm_90a", "sm_100a"])
    check.add_argument("--no-timing", action="store_true", help="skip the timing stage on a GPU")
    check.add_argument("--jobs", type=int, default=1,
                       help="parallel evaluators (default 1); on a GPU they compile and check in parallel "
                            "and take turns to time, so timings are not disturbed")
    check.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    check.set_defaults(func=check_suite)


def _check_chunk(task_ids: list[str], device: str, shapes: tuple[str, ...], target: str,
                 timing: bool = True) -> list[dict[str, Any]]:
    from kernelgym.env import EvalOptions, Evaluator
    from kernelgym.tasks import get_task

    rows = []
    with Evaluator(device) as evaluator:
        for task_id in task_ids:
            task = get_task(task_id)
            started = time.perf_counter()
            result = evaluator.evaluate(task, task.solution_source(),
                                        EvalOptions(device=device, shape_sets=shapes, target=target,
                                                    timing=timing))
            ok = bool(result.correct) and result.required_features_met is not False
            if result.correct is None and task.language == "cuda" and result.compiled:
                ok = True  # a CUDA task on a CPU: compiled and analysed; correctness needs a GPU (said below)
            rows.append({
                "task": task.id, "category": task.category, "ok": ok, "correct": result.correct,
                "compiled": result.compiled, "seconds": round(time.perf_counter() - started, 2),
                "speedup": result.speedup, "skipped": result.skipped_checks,
                "feedback": "" if ok else result.feedback,
            })
    return rows


def check_suite(args: argparse.Namespace) -> int:
    from kernelgym.env.device import resolve_device

    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    tasks = all_tasks(suite=args.suite, category=args.category)
    if args.task:
        tasks = [t for t in tasks if t.id in set(args.task)]
    if not tasks:
        raise UsageError("no task matches")
    default = ("dev", "heldout") if device == "cpu" else ("dev", "heldout", "bench")
    shapes = tuple(s for s in (args.shapes.split(",") if args.shapes else default) if s)
    jobs = max(1, min(args.jobs, len(tasks)))
    ids = [t.id for t in tasks]
    chunks = [ids[i::jobs] for i in range(jobs)]
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    if jobs == 1:
        rows = _check_chunk(ids, device, shapes, args.target, not args.no_timing)
    else:
        # spawn, not fork: a forked child of a process that touched CUDA cannot use it.
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_check_chunk, chunk, device, shapes, args.target, not args.no_timing)
                       for chunk in chunks]
            for future in as_completed(futures):
                rows.extend(future.result())
    rows.sort(key=lambda r: r["task"])
    _print_table(rows, device)
    failed = [r for r in rows if not r["ok"]]
    for row in failed:
        print(f"\n--- {row['task']} ---\n{row['feedback']}")
    print(f"\n{len(rows) - len(failed)} of {len(rows)} reference solutions pass on {device} "
          f"(shape sets {', '.join(shapes)}) in {time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "shapes": shapes, "rows": rows}, f, indent=1, default=str)
    return 1 if failed else 0


def _print_table(rows: list[dict[str, Any]], device: str) -> None:
    width = max(len(r["task"]) for r in rows)
    on_gpu = device != "cpu"
    header = f"{'task':{width}}  {'correct':7}  {'s':>6}"
    if on_gpu:
        header += f"  {'vs eager':>8}  {'vs compile':>10}  {'vs vendor':>9}"
    print(header)
    for r in rows:
        mark = "yes" if r["correct"] else ("n/a" if r["correct"] is None else "NO")
        line = f"{r['task']:{width}}  {mark:7}  {r['seconds']:6.1f}"
        if on_gpu:
            sp = r["speedup"] or {}
            line += "".join(f"  {sp[k]:>{w - 1}.2f}x" if k in sp else f"  {'-':>{w}}"
                            for k, w in (("eager", 8), ("torch.compile", 10), ("vendor", 9)))
        print(line)
    if os.environ.get("CI"):
        print(f"({len(rows)} rows)")
