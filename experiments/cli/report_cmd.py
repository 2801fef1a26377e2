"""``warpgym report RUN``: report.md and report.html (with plots) from a run's store."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="write report.md and report.html for a run")
    parser.add_argument("run", help="the run directory (or its name under --runs-root)")
    parser.add_argument("--runs-root", default="runs", metavar="DIR")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warpgym.experiments import report, rundir

    try:
        run_dir = rundir.find_run(args.run, Path(args.runs_root))
    except rundir.RunError as exc:
        raise UsageError(str(exc)) from None
    md, page = report.write(run_dir, plots=not args.no_plots)
    print(f"Report: {page}\nMarkdown: {md}\nNumbers: {run_dir / 'metrics.json'}")
    return 0
