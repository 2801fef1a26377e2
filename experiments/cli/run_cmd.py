"""``warpgym run CONFIG``: play an experiment's grid, store every step, write the report.

``warpgym run CONFIG`` starts a run in ``runs/NAME-TIMESTAMP``; ``warpgym run --resume RUN``
(or ``warpgym run CONFIG --run-dir RUN`` on an existing run) continues it: finished episodes
are skipped, unfinished ones continue from their last stored turn, no model call is repeated.

Exit status: 0 when the grid is done or a budget cap stopped it cleanly; 1 when some episodes
ended in an error (the report is still written); 2 for a bad experiment file; 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run",
        help="run an experiment (or resume one)",
        description="Play every episode of an experiment file's grid, storing each step.",
    )
    parser.add_argument(
        "config",
        nargs="?",
        help="the experiment file (.toml), or the name of a bundled one (quickstart); optional with --resume",
    )
    parser.add_argument(
        "--resume", metavar="RUN", help="continue this run (its directory, or its name under --runs-root)"
    )
    parser.add_argument(
        "--run-dir", metavar="DIR", help="the run directory (resumed when it already holds a run)"
    )
    parser.add_argument(
        "--runs-root", default="runs", metavar="DIR", help="where new runs go (default: runs/)"
    )
    parser.add_argument("--devices", help="override run.devices: auto, cpu, cuda, or cuda:0,cuda:1")
    parser.add_argument("--workers", type=int, help="override run.workers (evaluation workers on the CPU)")
    parser.add_argument("--concurrency", type=int, help="override run.concurrency (episodes in flight)")
    parser.add_argument("--max-tokens", type=int, help="override budget.max_tokens")
    parser.add_argument("--max-cost", type=float, metavar="USD", help="override budget.max_cost_usd")
    parser.add_argument(
        "--cache",
        choices=["auto", "read-write", "read-only", "off"],
        help="override run.cache: auto (default) reads only unsampled answers; read-write reads any; "
        "read-only never writes; off never reads or writes",
    )
    parser.add_argument("--no-cache", action="store_true", help="the same as --cache off")
    parser.add_argument(
        "--check", action="store_true", help="validate the experiment, print the grid, run nothing"
    )
    parser.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def _overrides(exp, args: argparse.Namespace) -> None:  # noqa: ANN001 - an Experiment
    from pydantic import ValidationError

    try:
        if args.devices:
            exp.run.devices = args.devices.split(",") if "," in args.devices else args.devices
        if args.workers is not None:
            exp.run.workers = args.workers
        if args.concurrency is not None:
            exp.run.concurrency = args.concurrency
        if args.max_tokens is not None:
            exp.budget.max_tokens = args.max_tokens
        if args.max_cost is not None:
            exp.budget.max_cost_usd = args.max_cost
        if args.cache:
            exp.run.cache = args.cache
        if args.no_cache:
            exp.run.cache = "off"
    except ValidationError as exc:
        raise UsageError("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())) from None


def _agent_line(exp, label: str) -> str:  # noqa: ANN001 - an Experiment
    agent = exp.agent(label)
    args = ", ".join(f"{k}={v!r}" for k, v in agent.params.items())
    history = f", history={agent.history!r}" if agent.history else ""
    source = "" if agent.origin() == agent.loop else f" from {agent.origin()}"
    return f"{label} = {agent.loop}({args}{history}){source}"


def run(args: argparse.Namespace) -> int:
    from warpgym.experiments import config as config_mod
    from warpgym.experiments import devices, providers, report, rundir, runner
    from warpgym.experiments.progress import Display

    if not args.config and not args.resume:
        raise UsageError("give an experiment file (e.g. warpgym run quickstart) or --resume RUN")
    exp = None
    try:
        if args.config:
            exp = config_mod.load(config_mod.find(args.config))
    except config_mod.ConfigError as exc:
        raise UsageError(str(exc)) from None
    root = Path(args.runs_root)
    try:
        if args.resume:
            run_dir = rundir.find_run(args.resume, root)
        elif args.run_dir:
            run_dir = Path(args.run_dir)
        else:
            assert exp is not None
            run_dir = rundir.new_run_dir(exp, root)
    except rundir.RunError as exc:
        raise UsageError(str(exc)) from None
    model_providers = None
    if exp is not None:
        _overrides(exp, args)
        try:  # a missing key or GPU fails here, before the run directory exists
            devices.resolve_devices(exp)
            model_providers = providers.build_providers(exp, providers.response_cache_dir(exp))
        except rundir.RunError as exc:
            raise UsageError(str(exc)) from None
    if args.check:
        assert exp is not None, "--check needs CONFIG"
        episodes = runner.grid(exp)
        print(
            f"{exp.name}: {len(exp.resolved_tasks)} tasks x {len(exp.agents)} agents x "
            f"{len(exp.models)} models x {len(exp.contexts)} contexts x {exp.samples} samples = "
            f"{len(episodes)} episodes, "
            f"up to {exp.max_turns} turns each"
        )
        print("tasks: " + ", ".join(exp.resolved_tasks))
        print("agents: " + "; ".join(_agent_line(exp, a) for a in exp.agents))
        live = [m for m in exp.models if not m.spec.startswith("replay:")]
        modes = ", ".join(f"{m.label} {providers.cache_mode(exp, m)}" for m in live)
        print(f'response cache (cache = "{exp.run.cache}"): ' + (modes or "not used (every model replays)"))
        return 0

    try:
        exp, store, resumed = rundir.open_run(exp, run_dir)
    except rundir.RunError as exc:
        raise UsageError(str(exc)) from None
    _overrides(exp, args)
    started = time.time()
    try:
        rundir.save_resolved(exp, run_dir)
        display = Display(exp.name, quiet=args.quiet)
        if not args.quiet:
            print(("Resuming" if resumed else "Starting") + f" run {run_dir}")
        try:
            outcome = runner.Runner(exp, run_dir, store, display=display, providers=model_providers).run()
        except rundir.RunError as exc:
            raise UsageError(str(exc)) from None
        if not args.quiet:
            print(display.summary())
    finally:
        store.close()
    if outcome.stopped:
        print(
            f"Stopped: {outcome.stopped}. {outcome.finished} of {outcome.total} episodes finished; "
            f"continue with: warpgym run --resume {run_dir}"
        )
    if not args.no_report:
        md, page = report.write(run_dir)
        print(f"Report: {page}  (Markdown: {md}; {time.time() - started:.0f} s in all)")
    if outcome.stopped and outcome.stopped.startswith("interrupted"):
        return 130
    return 1 if outcome.errors else 0
