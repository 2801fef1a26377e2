"""``warpgym compare RUN RUN...``: runs side by side (printed as Markdown, or written to a file)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="put runs side by side")
    parser.add_argument("runs", nargs="+", help="run directories (or names under --runs-root)")
    parser.add_argument("--runs-root", default="runs", metavar="DIR")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE, not stdout: .html (one page, plots inlined) or .md (plots in FILE-plots/)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warpgym.experiments import compare, report_html, report_markdown, rundir

    try:
        dirs = [rundir.find_run(r, Path(args.runs_root)) for r in args.runs]
    except rundir.RunError as exc:
        raise UsageError(str(exc)) from None
    if not args.output:
        print(report_markdown.render(compare.compare(dirs)))
        return 0
    out = Path(args.output)
    if out.suffix not in (".md", ".html"):
        raise UsageError(f"--output must end in .md or .html, not {out.name}")
    if out.suffix == ".html":
        with tempfile.TemporaryDirectory() as tmp:  # the page inlines its plots
            doc = compare.compare(dirs, Path(tmp) / "plots")
            out.write_text(report_html.render(doc, Path(tmp)))
    else:
        plots = out.parent / f"{out.stem}-plots"
        out.write_text(report_markdown.render(compare.compare(dirs, plots)))
        print(f"Plots: {plots}")
    print(f"Comparison: {out}")
    return 0
