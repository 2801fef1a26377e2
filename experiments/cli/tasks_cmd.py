"""``warpgym tasks list|show|import``: what there is to solve, the statement a model sees, and suites read
from the user's files."""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("tasks", help="list tasks, show one, or import a suite")
    tsub = parser.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    lst = tsub.add_parser("list", help="one line per task: id, category, dtypes, language")
    lst.add_argument("--category")
    lst.add_argument("--dtype")
    lst.add_argument("--suite")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=list_tasks)
    show = tsub.add_parser("show", help="the statement a model sees, the signature and the shapes")
    show.add_argument("task_id")
    show.add_argument("--all-shapes", action="store_true", help="also print heldout and bench shapes")
    show.set_defaults(func=show_task)
    imp = tsub.add_parser(
        "import",
        help="read a suite from your files (e.g. a KernelBench checkout), audit "
        "it for trivial tasks, and remember where it is",
    )
    imp.add_argument("format", help="the suite's format: kernelbench")
    imp.add_argument("path", help="a checkout, a folder of problem files, or one file")
    imp.add_argument("--no-audit", action="store_true", help="skip the triviality audit (run later by list)")
    imp.add_argument("--no-save", action="store_true", help="import and report only; remember nothing")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=import_tasks)


def _audits(tasks: list[Any]) -> dict[str, str]:
    """The triviality audit's phrase for each imported task (our own suites are not audited)."""
    from warpgym.env.judge import triviality

    return {t.id: triviality.describe(triviality.cached(t)) for t in tasks if t.model is not None}


def list_tasks(args: argparse.Namespace) -> int:
    from warpgym.tasks import all_tasks
    from warpgym.tasks.importers import use_configured

    use_configured()
    tasks = all_tasks(suite=args.suite, category=args.category, dtype=args.dtype)
    if not tasks:
        raise UsageError("no task matches those filters")
    audits = _audits(tasks)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": t.id,
                        "category": t.category,
                        "suite": t.suite,
                        "dtypes": list(t.dtypes),
                        "language": t.language,
                        **({"audit": audits[t.id]} if t.id in audits else {}),
                    }
                    for t in tasks
                ],
                indent=1,
            )
        )
        return 0
    width = max(len(t.id) for t in tasks)
    print(f"{'id':{width}}  {'category':13}  {'suite':11}  {'language':8}  dtypes")
    for t in tasks:
        flag = f"  [{audits[t.id]}]" if audits.get(t.id, "").startswith("TRIVIAL") else ""
        print(f"{t.id:{width}}  {t.category:13}  {t.suite:11}  {t.language:8}  {', '.join(t.dtypes)}{flag}")
    print(f"{len(tasks)} tasks")
    return 0


def show_task(args: argparse.Namespace) -> int:
    from warpgym.tasks import UnknownTaskError, case_label, get_task
    from warpgym.tasks.importers import use_configured

    use_configured()
    try:
        task = get_task(args.task_id)
    except UnknownTaskError as exc:
        raise UsageError(str(exc)) from None
    print(task.statement())
    if task.model is not None:
        print(f"Imported from {task.model.path} ({task.model.format}).")
        print(f"Sizes (not shown to a model): {task.model.sizes_note}. "
              "The bench sizes are the problem's own.")
        print(f"Triviality audit: {_audits([task])[task.id]}.")
    if task.performance_note:
        print(f"Reference performance (not shown to a model): {task.performance_note.strip()}\n")
    if args.all_shapes:
        for name in ("heldout", "bench"):
            print(f"{name} shapes (never shown to a model):")
            for case in task.cases(name):
                print(f"  - {case_label(case) or 'its own sizes'}")
    return 0


def import_tasks(args: argparse.Namespace) -> int:
    from warpgym.env.judge import triviality
    from warpgym.tasks.importers import SuiteSourceError, import_suite, save_source

    try:
        done = import_suite(args.format, args.path)
    except SuiteSourceError as exc:
        raise UsageError(str(exc)) from None
    audits = {} if args.no_audit else triviality.audited(done.tasks)
    trivial = {tid: a for tid, a in audits.items() if a.get("trivial")}
    if not args.no_save:
        save_source(args.format, args.path)
    if args.json:
        print(
            json.dumps(
                {"imported": [t.id for t in done.tasks], "failed": done.failures, "audit": audits}, indent=1
            )
        )
        return 0 if done.tasks else 1
    print(f"imported {len(done.tasks)} {args.format} problems from {args.path}")
    for file, why in done.failures.items():
        print(f"  not imported: {why}" if file in why else f"  not imported: {file}: {why}")
    if audits:
        print(
            f"triviality audit: {len(trivial)} of {len(audits)} tasks are passed, on some check, by an "
            "answer that computes nothing (left out of experiments unless include_trivial = true):"
        )
        for tid, result in sorted(trivial.items()):
            print(f"  {tid}: {triviality.passed_by(result)}")
    if not args.no_save:
        print("saved: `warpgym tasks list --suite kernelbench` and experiment files now find these tasks")
    return 0 if done.tasks else 1
