"""``warpgym export RUN --format jsonl|parquet``: the raw steps (or episodes) of a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("export", help="write a run's raw steps as JSON Lines or Parquet")
    parser.add_argument("run", help="the run directory (or its name under --runs-root)")
    parser.add_argument("--runs-root", default="runs", metavar="DIR")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    parser.add_argument(
        "--what",
        default="steps",
        choices=["steps", "episodes", "calls", "replay"],
        help="one row per turn (steps, default), per episode, per model call (with its origin: paid, "
        "cached or replayed, and its paid and recorded cost), or a replay file of one model's answers",
    )
    parser.add_argument("--model", help="with --what replay: the model whose answers to export")
    parser.add_argument("-o", "--output", metavar="FILE", help="default: RUN/export/WHAT.FORMAT")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warpgym.experiments import export, rundir

    try:
        run_dir = rundir.find_run(args.run, Path(args.runs_root))
        out = export.export(
            run_dir,
            run_dir / rundir.STORE_NAME,
            args.format,
            Path(args.output) if args.output else None,
            args.what,
            args.model,
        )
    except (rundir.RunError, export.ExportError) as exc:
        raise UsageError(str(exc)) from None
    print(f"Exported: {out}")
    return 0
