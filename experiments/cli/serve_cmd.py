"""``warpgym serve``: warm evaluators behind an HTTP API with a queue (see docs/serve.md).

It runs untrusted code for whoever can reach it: it listens on 127.0.0.1 unless told otherwise, and
refuses any other address without a bearer token.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import UsageError

EPILOG = ("The server judges untrusted code: keep it on 127.0.0.1 (the default), or give it a bearer "
          "token (SERVE_BEARER_TOKEN or --token-file) before --host exposes it. SIGTERM finishes the "
          "evaluations in flight (up to --drain-timeout) and keeps the queue in the journal for the next "
          "start.")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="serve evaluations over HTTP (a queue, a cache, a reward for RL "
                                          "trainers)", epilog=EPILOG)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--token-file", metavar="PATH",
                        help="file holding the bearer token clients must send (else $SERVE_BEARER_TOKEN)")
    parser.add_argument("--devices", default="auto",
                        help="auto (every visible GPU, else CPU), cpu, cuda, or a list: cuda:0,cuda:1")
    parser.add_argument("--workers", type=int, default=None,
                        help="CPU evaluators (default: half the cores, at most 4); Ray: CPU actors")
    parser.add_argument("--workers-per-gpu", type=int, default=1, help="evaluators per GPU (default 1)")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="local processes (default) or Ray actors on a cluster")
    parser.add_argument("--ray-address", default=None, help="the Ray cluster to join (auto, HOST:PORT, ...)")
    parser.add_argument("--suite", action="append", default=[], metavar="FORMAT=PATH",
                        help="judge an imported suite's tasks too, e.g. kernelbench=~/src/KernelBench "
                             "(repeatable; besides those `warpgym tasks import` saved and "
                             "WARPGYM_SUITE_<FORMAT>)")
    parser.add_argument("--journal", metavar="PATH", default="warpgym-serve.sqlite",
                        help="SQLite file of accepted submissions and verdicts "
                             "(default ./warpgym-serve.sqlite)")
    parser.add_argument("--no-cache", action="store_true",
                        help="judge every submission, even one identical to an earlier one")
    parser.add_argument("--max-queue", type=int, default=1024,
                        help="evaluations that may wait for a worker; past it, 429 (default 1024)")
    parser.add_argument("--max-batch", type=int, default=1024, help="submissions per batch (default 1024)")
    parser.add_argument("--max-body-mb", type=float, default=16.0, help="largest request body (default 16)")
    parser.add_argument("--max-timeout", type=float, default=600.0,
                        help="longest per-request timeout a client may ask for, seconds (default 600)")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="requests a second per client address (default 50; bursts of 4x)")
    parser.add_argument("--submit-rate", type=float, default=200.0,
                        help="candidates submitted a second per client address (default 200; bursts of 2000)")
    parser.add_argument("--drain-timeout", type=float, default=60.0,
                        help="on SIGTERM, seconds in-flight evaluations may take to finish (default 60)")
    parser.add_argument("--attempts", type=int, default=3,
                        help="tries per evaluation when a worker or actor is lost (default 3)")
    parser.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    parser.set_defaults(func=run)


def read_token(path: str | None) -> str | None:
    """The bearer token from ``path`` or the environment, which is then cleared so no child sees it."""
    from warpgym.experiments.serve.settings import TOKEN_ENV

    from_env = os.environ.pop(TOKEN_ENV, None)
    if path is None:
        return from_env.strip() if from_env else None
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise UsageError(f"--token-file {path}: {exc.strerror}") from None
    if not token:
        raise UsageError(f"--token-file {path} is empty")
    return token


def parse_suites(values: list[str]) -> dict[str, str]:
    """``--suite FORMAT=PATH`` options as format -> path (the format and path are checked with the rest)."""
    suites = {}
    for value in values:
        fmt, sep, path = value.partition("=")
        if not sep or not fmt.strip() or not path.strip():
            raise UsageError(f"--suite {value}: use FORMAT=PATH, e.g. kernelbench=~/src/KernelBench")
        suites[fmt.strip().lower()] = path.strip()
    return suites


def run(args: argparse.Namespace) -> int:
    import logging

    from warpgym.experiments.executors import ExecutorError
    from warpgym.experiments.serve import server
    from warpgym.experiments.serve.journal import JournalInUse
    from warpgym.experiments.serve.service import EvalService
    from warpgym.experiments.serve.settings import Settings, check

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    settings = Settings(
        host=args.host, port=args.port, token=read_token(args.token_file), journal=Path(args.journal),
        cache=not args.no_cache, max_queue=args.max_queue, max_batch=args.max_batch,
        max_body_bytes=int(args.max_body_mb * (1 << 20)), max_timeout_s=args.max_timeout,
        requests_per_s=args.rate, request_burst=max(1, int(args.rate * 4)),
        submissions_per_s=args.submit_rate, submission_burst=max(args.max_batch, 2000),
        attempts=args.attempts, drain_s=args.drain_timeout, suites=parse_suites(args.suite))
    try:
        check(settings)
        suites = server.use_suites(settings)  # a suite that cannot be imported stops the start here
        spec = server.Workers(devices=args.devices, workers=args.workers, per_gpu=args.workers_per_gpu,
                              executor=args.executor, ray_address=args.ray_address)
        executor = server.make_executor(spec)
    except (ValueError, ExecutorError) as exc:
        raise UsageError(str(exc)) from None

    def ready(service: EvalService, port: int) -> None:
        status = service.status()
        print(f"warpgym serve: listening on http://{args.host}:{port} with {status['workers']} "
              f"{status['kind']} worker(s); journal {settings.journal} ({status['resumed']} "
              "submission(s) resumed)"
              f"{''.join(f'; suite {fmt} from {path}' for fmt, path in suites.items())}"
              f"{'' if settings.token else '; no token (loopback only)'}", file=sys.stderr, flush=True)

    try:
        return server.serve(settings, executor, log_level=args.log_level, on_ready=ready)
    except JournalInUse as exc:
        raise UsageError(str(exc)) from None
