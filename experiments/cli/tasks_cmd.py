"""``warpgym tasks list|show``: what there is to solve, and the statement a model sees."""

from __future__ import annotations

import argparse
import json

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("tasks", help="list tasks or show one")
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


def list_tasks(args: argparse.Namespace) -> int:
    from warpgym.tasks import all_tasks

    tasks = all_tasks(suite=args.suite, category=args.category, dtype=args.dtype)
    if not tasks:
        raise UsageError("no task matches those filters")
    if args.json:
        print(json.dumps([{"id": t.id, "category": t.category, "suite": t.suite, "dtypes": list(t.dtypes),
                           "language": t.language} for t in tasks], indent=1))
        return 0
    width = max(len(t.id) for t in tasks)
    print(f"{'id':{width}}  {'category':13}  {'suite':6}  {'language':8}  dtypes")
    for t in tasks:
        print(f"{t.id:{width}}  {t.category:13}  {t.suite:6}  {t.language:8}  {', '.join(t.dtypes)}")
    print(f"{len(tasks)} tasks")
    return 0


def show_task(args: argparse.Namespace) -> int:
    from warpgym.tasks import UnknownTaskError, case_label, get_task

    try:
        task = get_task(args.task_id)
    except UnknownTaskError as exc:
        raise UsageError(str(exc)) from None
    print(task.statement())
    if task.performance_note:
        print(f"Reference performance (not shown to a model): {task.performance_note.strip()}\n")
    if args.all_shapes:
        for name in ("heldout", "bench"):
            print(f"{name} shapes (never shown to a model):")
            for case in task.cases(name):
                print(f"  - {case_label(case)}")
    return 0
