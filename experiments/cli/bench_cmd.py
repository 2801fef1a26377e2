"""``warpgym bench``: how many evaluations per minute the harness does, and how faithfully it times.

A thin layer over :mod:`warpgym.experiments.bench.eval_throughput`. On a CPU it runs the mix in
Triton's interpreter with timing off (a check of the plumbing and verdicts, not a GPU figure).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "bench",
        help="measure evaluation throughput and timing fidelity against the harness's targets "
        "(on a GPU: >= 20 warm evaluations a minute, < 0.5 s overhead, repeated timings within 1%%, "
        "within 3%% of Nsight Compute)",
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda (or cuda:N) or auto (default)")
    parser.add_argument("--reps", type=int, default=30, help="timed calls per bench case (default 30)")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up calls before timing (default 5)")
    parser.add_argument("--cold", type=int, default=3,
                        help="evaluations with a fresh evaluator each (default 3)")
    parser.add_argument("--spread", type=int, default=5,
                        help="repeated timings of the matmul reference for the spread (default 5; 0 skips)")
    parser.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute comparison")
    parser.add_argument("--tasks", default=None,
                        help="comma-separated subset of the five core tasks (default: all five)")
    parser.add_argument("--out", metavar="PATH", default=None,
                        help="write the JSON report here (rewritten after each phase)")
    parser.set_defaults(func=bench)


def bench(args: argparse.Namespace) -> int:
    from warpgym.env.common.device import resolve_device
    from warpgym.experiments.bench.eval_throughput import check_tasks, run_benchmark

    for name in ("reps", "warmup", "cold", "spread"):
        value = getattr(args, name)
        if value < (1 if name == "reps" else 0):
            raise UsageError(f"--{name} must be at least {1 if name == 'reps' else 0}, not {value}")
    tasks = None
    if args.tasks is not None:
        tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
        try:
            check_tasks(tasks)
        except ValueError as exc:
            raise UsageError(f"--tasks: {exc}") from None
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out) if args.out else None
    run_benchmark(device, reps=args.reps, warmup=args.warmup, cold=args.cold, spread=args.spread,
                  ncu=not args.no_ncu, tasks=tasks, out=out)
    if out is not None:
        print(f"\nwrote {out}")
    return 0
