"""The ``warpgym`` command line: one module per command, each with ``register(subparsers)``.

A command module's ``register`` adds its parser and sets ``func`` (args -> exit code). Exit
code 0 means the command did its job; 1 means it ran and the answer is no (``eval``: the
candidate was not accepted; ``suite check``: a reference failed); 2 means a usage error
(unknown task, missing file, bad option).

Command modules import only the standard library at the top; what a command needs (torch, the
tasks, the agents, plotting) is imported inside the function that runs it, so ``--help`` is quick.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS = ("tasks", "eval", "suite", "run", "report", "compare", "export", "fixit", "bench", "context",
            "view", "serve")


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    from warpgym import __version__

    parser = argparse.ArgumentParser(prog="warpgym", description="A gym for GPU-kernel-writing agents.")
    parser.add_argument("--version", action="version", version=f"warpgym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"warpgym.experiments.cli.{name}_cmd")
        except ModuleNotFoundError as exc:
            if exc.name == f"warpgym.experiments.cli.{name}_cmd":
                continue  # a command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"warpgym {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
