"""``warpgym view RUN``: browse a run in a web page, while it runs and after.

By default the page is written next to the run (``RUN/view/index.html``, opened from disk) and kept
up to date while the run goes on; ``--serve`` serves it on 127.0.0.1 instead, rebuilt on request.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "view",
        help="browse a run's episodes and turns in a web page",
        description=(
            "Browse a run in a web page: episodes filtered by task, category, agent, model and context; "
            "each turn's prompt, answer, diff from the previous candidate, verdict, tokens, time and "
            "cost; the run's summary and figures. The page is written to RUN/view/ (open index.html "
            "from disk) and rewritten while the run goes on, or served on 127.0.0.1 with --serve. "
            "The report's figures (RUN/plots/, report.html) are redrawn at most once a minute."
        ),
    )
    parser.add_argument("run", help="the run directory (or its name under --runs-root)")
    parser.add_argument("--runs-root", default="runs", metavar="DIR")
    parser.add_argument("--out", metavar="DIR", help="where to write the page (default: RUN/view)")
    parser.add_argument(
        "--serve", action="store_true", help="serve the page on 127.0.0.1 instead of writing it"
    )
    parser.add_argument("--port", type=int, default=8765, help="the port for --serve (0: any free one)")
    parser.add_argument(
        "--refresh", type=float, default=5.0, metavar="SECONDS", help="how often a live run is re-read"
    )
    parser.add_argument(
        "--once", action="store_true", help="write the page once and exit, even if the run is live"
    )
    parser.add_argument("--no-plots", action="store_true", help="do not redraw the report's figures")
    parser.add_argument("--open", action="store_true", help="open the page in the default web browser")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warpgym.experiments import rundir

    try:
        run_dir = rundir.find_run(args.run, Path(args.runs_root)).resolve()
    except rundir.RunError as exc:
        raise UsageError(str(exc)) from None
    if args.refresh <= 0:
        raise UsageError(f"--refresh must be a positive number of seconds, not {args.refresh}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    report_every = None if args.no_plots else 60.0
    if args.serve:
        return _serve(run_dir, args, report_every)
    return _write(run_dir, args, report_every)


def _write(run_dir: Path, args: argparse.Namespace, report_every: float | None) -> int:
    from warpgym.experiments.view.site import Site

    out = Path(args.out).resolve() if args.out else run_dir / "view"
    site = Site(run_dir, out, refresh_s=args.refresh, report_every_s=report_every)
    try:
        site.write_page()
        index = site.update()
        url = site.page.as_uri()
        print(f"View: {url}")
        _maybe_open(args, url)
        if index["live"] and not args.once:
            print(f"The run is going on: the page is rewritten every {args.refresh:g} s (Ctrl-C to stop).")
            try:
                site.watch(until_idle=True)
            except KeyboardInterrupt:
                print("stopped watching; the page shows the run as it was")
                return 0
            print("The run is no longer going on; the page is complete.")
    finally:
        site.close()
    return 0


def _serve(run_dir: Path, args: argparse.Namespace, report_every: float | None) -> int:
    from warpgym.experiments.view.server import ViewServer

    try:
        server = ViewServer(run_dir, args.port, refresh_s=args.refresh, report_every_s=report_every)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    print(f"Serving {run_dir} at {server.url} (Ctrl-C to stop)")
    _maybe_open(args, server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()
    return 0


def _maybe_open(args: argparse.Namespace, url: str) -> None:
    if args.open:
        import webbrowser

        webbrowser.open(url)
