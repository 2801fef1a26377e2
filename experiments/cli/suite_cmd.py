"""``warpgym suite check``: every reference solution through the environment, as a table.

Fails (exit 1) if any reference fails: a suite whose references do not pass cannot judge
anyone else's kernels. A task's extra reference solutions (``Task.extra_solutions``) are checked too,
each as a row of its own labelled ``task (solution)``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Collection
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from warpgym.env.toolchain import targets

from . import UsageError

if TYPE_CHECKING:
    from warpgym.env.judge.result import Timing


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("suite", help="check the suites' reference solutions")
    ssub = parser.add_subparsers(dest="suite_command", metavar="ACTION", required=True)
    check = ssub.add_parser("check", help="run every reference solution through the environment")
    check.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    check.add_argument("--suite", default=None, help="triton or ptx (default: both)")
    check.add_argument("--category", default=None)
    check.add_argument("--task", action="append", default=[], help="only these task ids (repeatable)")
    check.add_argument("--no-extra", action="store_true",
                       help="check each task's default reference only, not its extra reference solutions")
    check.add_argument("--shapes", default=None,
                       help="shape sets to check (default dev,heldout; on a GPU with --no-timing also bench: "
                            "with timing, every bench case is checked after its timing loop)")
    check.add_argument("--target", default="sm_90a", choices=targets.NAMES)
    check.add_argument("--no-timing", action="store_true", help="skip the timing stage on a GPU")
    check.add_argument("--jobs", type=int, default=1,
                       help="parallel evaluators (default 1); on a GPU they compile and check in parallel "
                            "and take turns to time, so timings are not disturbed")
    check.add_argument("--reps", type=int, default=None,
                       help="timed calls per shape (default: the evaluator's)")
    check.add_argument("--input-seed", type=int, default=None, metavar="N",
                       help="draw every evaluation's inputs from this root (default: a secret one per "
                            "evaluation; each row records its own, to replay a failure)")
    check.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    check.add_argument("--jsonl", metavar="PATH",
                       help="append each row to PATH as it finishes; tasks already there are not run again")
    check.add_argument("--markdown", metavar="PATH",
                       help="also write the table (geomean per category) to PATH")
    check.set_defaults(func=check_suite)


_EVALUATOR: Any = None
JOBS_PER_GPU = 4
"""On the H200, 8 evaluators per GPU ran out of its 140 GB on bench cases (2026-11-29); 4 leave room."""


def _open_evaluator(device: str) -> None:
    """This process's evaluator, kept for every task the process is given and closed at its exit."""
    global _EVALUATOR
    from multiprocessing.util import Finalize

    from warpgym.env import Evaluator

    if device.startswith("cuda:"):
        # Pin the whole process (its baselines and its worker's candidate) to that one GPU before CUDA
        # starts here, so the per-GPU timing lock and every allocation agree on which GPU it is.
        from warpgym.env.common.device import physical_gpu

        os.environ["CUDA_VISIBLE_DEVICES"] = physical_gpu(int(device.split(":")[1]))
        device = "cuda"
    _EVALUATOR = Evaluator(device)
    Finalize(_EVALUATOR, _EVALUATOR.close, exitpriority=10)


def _close_evaluator() -> None:
    global _EVALUATOR
    if _EVALUATOR is not None:
        _EVALUATOR.close()
        _EVALUATOR = None


def _start_evaluator(devices: Any) -> None:
    """Pool initializer: each process takes the next device of the shared queue (one GPU each in turn)."""
    _open_evaluator(devices.get())


def _check_one(task_id: str, shapes: tuple[str, ...], target: str, timing: bool,
               reps: int | None = None, reference: str | None = None, input_seed: int | None = None
               ) -> dict[str, Any]:
    from warpgym.env import EvalOptions
    from warpgym.tasks import get_task

    evaluator = _EVALUATOR
    task = get_task(task_id)
    started = time.perf_counter()
    extra = {"reps": reps} if reps else {}
    result = evaluator.evaluate(task, task.solution_candidate(reference),
                                EvalOptions(device=evaluator.device, shape_sets=shapes, target=target,
                                            timing=timing, input_seed=input_seed, **extra))
    ok = bool(result.correct) and result.required_features_met is not False
    if result.correct is None and task.language == "cuda" and result.compiled:
        ok = True  # a CUDA task on a CPU: compiled and analysed; correctness needs a GPU (said below)
    return {
        "task": task.id, "reference": reference, "category": task.category, "ok": ok,
        "correct": result.correct, "compiled": result.compiled, "input_seed": result.input_seed,
        "seconds": round(time.perf_counter() - started, 2),
        # where those seconds went (compile, correctness, timing, its windows...): on a shared GPU the rest
        # of the timing stage is the wait for the bench slot
        "stage_seconds": {k: round(v, 2) for k, v in result.seconds.items()},
        "device": evaluator.device, "speedup": result.speedup, "skipped": result.skipped_checks,
        "candidate_ms": [round(t.median_ms, 5) for t in result.timing or []] or None,
        # the device time of the same work, traced timed calls and the check after the window
        "work_ms": [[t.traced_device_ms, t.checked_device_ms] for t in result.timing or []] or None,
        "baseline_errors": baseline_errors(result.timing or []),
        "sampled_mismatches": sampled_mismatches(result.timing or []),
        "harness_failure": result.harness_failure,
        "out_of_memory": "OutOfMemoryError" in (result.runtime_error or ""),
        "feedback": "" if ok else result.feedback,
    }


def beside_others_failure(row: dict[str, Any]) -> bool:
    """The harness or the reference ran out of GPU memory (``out_of_memory``: the runtime error names it in
    either case), perhaps memory other evaluations on the GPU held (a bench case's eager baseline can take
    tens of gigabytes), so the task is checked again alone before its row counts."""
    return not row["ok"] and bool(row.get("out_of_memory"))


def sampled_mismatches(timings: list[Timing]) -> list[list[int] | None] | None:
    """Per bench case, [outside the tolerance, read] of the sampled timed answers: how near an honest
    reference comes to the allowed outliers."""
    rows = [[t.sampled_values["mismatches"], t.sampled_values["elements"]] if t.sampled_values else None
            for t in timings]
    return rows or None


def check_again_alone(rows: list[dict[str, Any]], check: Callable[[str, str | None], dict[str, Any]],
                      finished: Callable[[dict[str, Any]], None], checked_alone: Collection[str] = ()) -> int:
    """The rows that ran out of GPU memory beside other evaluations, checked again one at a time in this
    process: their new rows replace them. Rows already checked alone (``checked_alone``, by label) ran out
    by themselves and stay. Returns how many."""
    def retried(r: dict[str, Any]) -> bool:
        return beside_others_failure(r) and label(r) not in checked_alone

    again = [(r["task"], r.get("reference")) for r in rows if retried(r)]
    if again:
        print(f"{len(again)} ran out of GPU memory beside other evaluations: checking them again, one at a "
              "time", flush=True)
        rows[:] = [r for r in rows if not retried(r)]
        for task_id, extra in again:
            finished(check(task_id, extra))
    return len(again)


def baseline_errors(timings: list[Timing]) -> dict[str, str] | None:
    """Why a baseline has no speedup in the row: each one's first error over the bench cases."""
    from warpgym.tasks import case_label

    errors: dict[str, str] = {}
    for t in timings:
        for name, why in t.baseline_errors.items():
            errors.setdefault(name, f"{case_label(t.case)}: {why}"[:300])
    return errors or None


def default_shapes(device: str, timing: bool) -> tuple[str, ...]:
    """dev and heldout; bench too on a GPU without timing (with timing, each bench case is checked after
    its timing loop already: checking it before too would move gigabytes of outputs twice)."""
    if device != "cpu" and not timing:
        return ("dev", "heldout", "bench")
    return ("dev", "heldout")


def _devices(device: str, jobs: int) -> list[str]:
    """One entry per job: ``cuda`` is spread over every visible GPU in turn."""
    if device != "cuda":
        return [device] * jobs
    import torch

    gpus = max(1, torch.cuda.device_count())
    return [f"cuda:{i % gpus}" for i in range(jobs)]


def label(row: dict[str, Any]) -> str:
    """A row's name: the task id, with the solution's path for an extra reference solution."""
    return row["task"] + (f" ({row['reference']})" if row.get("reference") else "")


def _read_done(path: str | None) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Passing rows of an earlier run's ``--jsonl`` file, by label: a resumed run does not repeat them, and
    checks a failed task again (the failure may have been the run's, such as memory another task held).
    Also the labels whose last row ran out of GPU memory beside other evaluations: checked alone first."""
    done: dict[str, dict[str, Any]] = {}
    short_of_memory: set[str] = set()
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by a crash: that task runs again
                    if row.get("ok"):
                        done[label(row)] = row
                    else:
                        done.pop(label(row), None)
                    if beside_others_failure(row):
                        short_of_memory.add(label(row))
                    else:
                        short_of_memory.discard(label(row))
    return done, short_of_memory


def check_suite(args: argparse.Namespace) -> int:
    from warpgym.env.common.device import resolve_device
    from warpgym.tasks import all_tasks

    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    tasks = all_tasks(suite=args.suite, category=args.category)
    if args.task:
        known = {t.id for t in all_tasks()}
        unknown = [t for t in args.task if t not in known]
        if unknown:
            raise UsageError(f"unknown task id {unknown[0]!r} (see `warpgym tasks list`)")
        chosen = {t.id: t for t in tasks}  # in the order given: the first named are checked first
        tasks = [chosen[i] for i in dict.fromkeys(args.task) if i in chosen]
    if not tasks:
        raise UsageError("no task matches")
    shapes = tuple(s for s in (args.shapes.split(",") if args.shapes else
                               default_shapes(device, not args.no_timing)) if s)
    bad = [s for s in shapes if s not in ("dev", "heldout", "bench")]
    if bad:
        raise UsageError(f"unknown shape set {bad[0]!r}; use dev, heldout, bench")
    if args.input_seed is not None:
        from warpgym.env.judge.seeds import check_root

        try:
            check_root(args.input_seed)
        except ValueError as exc:
            raise UsageError(f"--input-seed: {exc}") from None
    timing = not args.no_timing
    done, short_of_memory = _read_done(args.jsonl)
    work = [(t.id, extra) for t in tasks for extra in (None, *(() if args.no_extra else t.extra_solutions))]
    names = {item: label({"task": item[0], "reference": item[1]}) for item in work}
    rows: list[dict[str, Any]] = [done[names[item]] for item in work if names[item] in done]
    # Those that ran out of memory beside others last time go first, alone: a run cut short by a time
    # limit would otherwise never reach its retry at the end.
    first_alone = [item for item in work if names[item] in short_of_memory]
    ids = [item for item in work if names[item] not in done and item not in first_alone]
    total = len(work)
    if rows:
        print(f"resuming: {len(rows)} tasks already in {args.jsonl}, {len(ids) + len(first_alone)} to check",
              flush=True)
    log = open(args.jsonl, "a") if args.jsonl else None  # noqa: SIM115 - closed below
    started = time.perf_counter()

    def finished(row: dict[str, Any]) -> None:
        rows.append(row)
        _print_row(row, device, len(rows), total)
        if log:
            log.write(json.dumps(row, default=str) + "\n")
            log.flush()

    try:
        if first_alone:
            print(f"{len(first_alone)} ran out of GPU memory beside other evaluations in the earlier run: "
                  "checking them first, one at a time", flush=True)
            _open_evaluator(device)
            for task_id, extra in first_alone:
                finished(_check_one(task_id, shapes, args.target, timing, args.reps, extra, args.input_seed))
        jobs = max(1, min(args.jobs, len(ids) or 1))
        if first_alone and jobs > 1:
            _close_evaluator()  # the pool's evaluators get the whole GPU
        if device.startswith("cuda"):
            import torch

            most = JOBS_PER_GPU * (max(1, torch.cuda.device_count()) if device == "cuda" else 1)
            if jobs > most:
                print(f"--jobs {jobs}: at most {JOBS_PER_GPU} evaluators per GPU share its memory (bench "
                      f"cases take gigabytes each); using {most}", flush=True)
                jobs = most
        if jobs == 1 and ids:
            if _EVALUATOR is None:
                _open_evaluator(device)
            for task_id, extra in ids:
                finished(_check_one(task_id, shapes, args.target, timing, args.reps, extra, args.input_seed))
        elif ids:
            # spawn, not fork: a forked child of a process that touched CUDA cannot use it.
            context = multiprocessing.get_context("spawn")
            manager = context.Manager()
            devices = manager.Queue()
            for d in _devices(device, jobs):
                devices.put(d)
            with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_evaluator,
                                     initargs=(devices,)) as pool:
                futures = {pool.submit(_check_one, task_id, shapes, args.target, timing, args.reps, extra,
                                       args.input_seed): (task_id, extra) for task_id, extra in ids}
                for future in as_completed(futures):
                    try:
                        finished(future.result())
                    except Exception as exc:  # noqa: BLE001 - one task's harness failure is a row, not a crash
                        task_id, extra = futures[future]
                        finished({"task": task_id, "reference": extra, "category": task_id.split("/")[0],
                                  "ok": False, "correct": None, "compiled": None, "seconds": 0.0,
                                  "speedup": None,
                                  "feedback": f"the harness failed on it: {type(exc).__name__}: {exc}"})
            manager.shutdown()

            def alone(task_id: str, extra: str | None) -> dict[str, Any]:
                if _EVALUATOR is None:
                    _open_evaluator(device)
                return _check_one(task_id, shapes, args.target, timing, args.reps, extra, args.input_seed)

            check_again_alone(rows, alone, finished, {names[item] for item in first_alone})
    finally:
        if log:
            log.close()
    rows.sort(key=lambda r: (r["task"], r.get("reference") or ""))
    print()
    _print_table(rows, device)
    failed = [r for r in rows if not r["ok"]]
    for row in failed:
        print(f"\n--- {label(row)} ---\n{row['feedback']}")
        if row.get("input_seed") is not None:
            print(f"(its inputs again: --task {row['task']} --input-seed {row['input_seed']})")
    print(f"\n{len(rows) - len(failed)} of {len(rows)} reference solutions pass on {device} "
          f"(shape sets {', '.join(shapes)}) in {time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "shapes": shapes, "rows": rows}, f, indent=1, default=str)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown_table(rows))
    return 1 if failed else 0


def _print_row(row: dict[str, Any], device: str, n: int, total: int) -> None:
    sp = row.get("speedup") or {}
    mark = "yes" if row["correct"] else ("n/a" if row["correct"] is None else "NO")
    speed = "  ".join(f"{k} {sp[k]:.2f}x" for k in ("eager", "torch.compile", "vendor") if k in sp)
    print(f"[{n}/{total}] {label(row)}: correct {mark}, {row['seconds']:.1f} s {speed}".rstrip(), flush=True)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The suite's speedups as Markdown: per category the geometric means (of the default references),
    then every row."""
    from warpgym.experiments.metrics import geomean

    out = ["| category | tasks | correct | geomean vs eager | geomean vs torch.compile | slower than eager |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    categories = sorted({r["category"] for r in rows})
    for category in categories + ["all"]:
        group = [r for r in rows if category in ("all", r["category"]) and not r.get("reference")]
        eager = [(r.get("speedup") or {}).get("eager") for r in group]
        compiled = [(r.get("speedup") or {}).get("torch.compile") for r in group]
        g_e, g_c = geomean(eager), geomean(compiled)
        slower = sum(1 for v in eager if v is not None and v < 1)
        out.append(f"| {category} | {len(group)} | {sum(1 for r in group if r['correct'])} | "
                   f"{'-' if g_e is None else f'{g_e:.2f}x'} | {'-' if g_c is None else f'{g_c:.2f}x'} | "
                   f"{slower} |")
    out += ["", "| task | correct | vs eager | vs torch.compile | vs vendor | vs the best | "
            "candidate ms (bench) |", "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    noted = dict(performance_notes([r["task"] for r in rows]))
    unexplained = []
    for r in rows:
        sp = r.get("speedup") or {}
        cells = [f"{sp[k]:.2f}x" if sp.get(k) else "-" for k in ("eager", "torch.compile", "vendor")]
        best = against_the_best(sp)
        flag = " **<0.5x eager**" if sp.get("eager") and sp["eager"] < 0.5 else ""
        if best is not None and best < SLOW and r["task"] not in noted and not r.get("reference"):
            unexplained.append(r["task"])
            flag += " **below 0.8x, no note**"
        mark = "yes" if r["correct"] else ("n/a" if r["correct"] is None else "NO")
        ms = ", ".join(f"{m:.4g}" for m in r.get("candidate_ms") or []) or "-"
        out.append(f"| {label(r)}{flag} | {mark} | {' | '.join(cells)} | "
                   f"{'-' if best is None else f'{best:.2f}x'} | {ms} |")
    timed = [r for r in rows
             if against_the_best(r.get("speedup") or {}) is not None and not r.get("reference")]
    out += ["", f"{len(timed) - len(unexplained)} of {len(timed)} timed references are at {SLOW}x of their "
            "best baseline or above, or say in their task's `performance_note` why not."]
    if noted:
        out += ["", "Why these references stay below 0.8x of their best baseline (each task's "
                "`performance_note`):"]
        out += [f"- `{task_id}`: {note}" for task_id, note in noted.items()]
    return "\n".join(out) + "\n"


SLOW = 0.8
"""A reference under this fraction of its fastest baseline needs a measured reason in its declaration."""


def against_the_best(speedup: dict[str, float | None]) -> float | None:
    """The speedup over the fastest baseline (the smallest of the speedups), None if none was timed."""
    values = [v for v in speedup.values() if v]
    return min(values) if values else None


def performance_notes(task_ids: list[str]) -> list[tuple[str, str]]:
    """(task id, note) for each known task whose declaration says why its reference is slow."""
    from warpgym.tasks import UnknownTaskError, get_task

    notes = []
    for task_id in task_ids:
        try:
            note = get_task(task_id).performance_note.strip()
        except UnknownTaskError:
            continue
        if note:
            notes.append((task_id, " ".join(note.split())))
    return notes


def _print_table(rows: list[dict[str, Any]], device: str) -> None:
    width = max(len(label(r)) for r in rows)
    on_gpu = device != "cpu"
    header = f"{'task':{width}}  {'correct':7}  {'s':>6}"
    if on_gpu:
        header += f"  {'vs eager':>8}  {'vs compile':>10}  {'vs vendor':>9}"
    print(header)
    for r in rows:
        mark = "yes" if r["correct"] else ("n/a" if r["correct"] is None else "NO")
        line = f"{label(r):{width}}  {mark:7}  {r['seconds']:6.1f}"
        if on_gpu:
            sp = r["speedup"] or {}
            line += "".join(f"  {sp[k]:>{w - 1}.2f}x" if k in sp else f"  {'-':>{w}}"
                            for k, w in (("eager", 8), ("torch.compile", 10), ("vendor", 9)))
        print(line)
    if os.environ.get("CI"):
        print(f"({len(rows)} rows)")
